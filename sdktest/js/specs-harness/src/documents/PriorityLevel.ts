export { PriorityLevel } from "@azure/cosmos";
