export { masterKey } from "./_testConfig";
