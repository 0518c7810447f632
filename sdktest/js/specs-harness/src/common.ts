// Harness: the SDK's internal common module (StatusCodes, SubStatusCodes, Constants, OperationType, ResourceType, …), from its build.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const c = require("../node_modules/@azure/cosmos/dist/commonjs/common/index.js");
export const SubStatusCodes = c.SubStatusCodes;
export const StatusCodes = c.StatusCodes;
export const Constants = c.Constants;
export const OperationType = c.OperationType;
export const ResourceType = c.ResourceType;
