// Harness: where the specs find the server (the emulator's defaults, overridable as the SDK's own config does).
export const endpoint = process.env.ACCOUNT_HOST || "https://localhost:8081";
export const masterKey =
  process.env.ACCOUNT_KEY ||
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
