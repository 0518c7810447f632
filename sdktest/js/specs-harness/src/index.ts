// Harness: the specs' "../../../src" is the published @azure/cosmos that run_specs.sh installs.
export * from "@azure/cosmos";
