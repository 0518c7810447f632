export * from "@azure/cosmos";
