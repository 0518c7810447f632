// Harness: the SDK's internal batch helpers, from its build, for the
// SDK's own unit spec that bulk.item.spec.ts imports a helper from.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const b = require("../../node_modules/@azure/cosmos/dist/commonjs/utils/batch.js");
export const calculateObjectSizeInBytes = b.calculateObjectSizeInBytes;
export const splitBatchBasedOnBodySize = b.splitBatchBasedOnBodySize;
export const BulkOperationType = b.BulkOperationType;
export type Operation = any;
export type Batch = any;
