// Harness: vitest for the specs written for it, one file at a time, with
// the SDK's internal modules ($internal) from its build.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.spec.ts"],
    testTimeout: 60000,
    hookTimeout: 60000,
    fileParallelism: false,
  },
  resolve: { alias: { $internal: new URL("./node_modules/@azure/cosmos/dist/esm", import.meta.url).pathname } },
});
