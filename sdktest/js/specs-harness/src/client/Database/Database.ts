export { Database } from "@azure/cosmos";
