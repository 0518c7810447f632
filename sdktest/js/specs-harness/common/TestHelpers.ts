// Harness: the helpers the specs import, written here to the signatures the specs call.
import assert from "assert";
import {
  Container,
  ContainerRequest,
  CosmosClient,
  Database,
  DatabaseRequest,
  PartitionKey,
  PermissionDefinition,
  RequestOptions,
  User,
  UserDefinition,
} from "../../../src";
import { endpoint, masterKey } from "./_testConfig";
// The SDK's internal helper, as the SDK's own TestHelpers imports it from src.
import * as epk from "../../../node_modules/@azure/cosmos/dist/commonjs/extractPartitionKey.js";
const extractPartitionKeys = (epk as any).extractPartitionKeys ?? (epk as any).default.extractPartitionKeys;

// defaultClient reaches the server with the master key.
export const defaultClient = new CosmosClient({
  endpoint,
  key: masterKey,
  connectionPolicy: { enableBackgroundEndpointRefreshing: false },
});

// defaultComputeGatewayClient reaches the server's compute gateway.
export const defaultComputeGatewayClient = new CosmosClient({
  endpoint: process.env.COMPUTE_HOST || endpoint.replace(":8081", ":8903"),
  key: masterKey,
  connectionPolicy: { enableBackgroundEndpointRefreshing: false },
});

// getDefaultClient returns defaultClient.
export function getDefaultClient(): CosmosClient {
  return defaultClient;
}

// getEntropy is a random suffix for the specs' resource ids.
export function getEntropy(): string {
  return `${Math.floor(Math.random() * 10000)}`;
}

// addEntropy is name with a random suffix.
export function addEntropy(name: string): string {
  return name + getEntropy();
}

// removeAllDatabases deletes every database of the account.
export async function removeAllDatabases(client: CosmosClient = defaultClient): Promise<void> {
  const { resources } = await client.databases.readAll().fetchAll();
  await Promise.all(resources.map((d) => client.database(d.id).delete()));
}

// getTestDatabase creates a database named after the test.
export async function getTestDatabase(
  testName: string,
  client: CosmosClient = defaultClient,
  attrs?: Partial<DatabaseRequest>,
): Promise<Database> {
  const id = `${testName.replace(" ", "").substring(0, 30)}${getEntropy()}`;
  await client.databases.create({ id, ...attrs });
  return client.database(id);
}

// getTestContainer creates a container, in a database of its own, named after the test.
export async function getTestContainer(
  testName: string,
  client: CosmosClient = defaultClient,
  containerDef?: ContainerRequest,
  options?: RequestOptions,
): Promise<Container> {
  const db = await getTestDatabase(testName, client);
  const id = `${testName.replace(" ", "").substring(0, 30)}${getEntropy()}`;
  await db.containers.create({ ...containerDef, ...{ id } }, options);
  return db.container(id);
}

// bulkInsertItems creates the documents and returns them as created.
export async function bulkInsertItems(container: Container, documents: any[]): Promise<any[]> {
  return Promise.all(documents.map(async (doc) => (await container.items.create(doc)).resource));
}

function keyOf(document: any, partitionKeyDef: any): PartitionKey {
  const keys = extractPartitionKeys(document, partitionKeyDef);
  return keys === undefined ? undefined : keys.length === 1 ? keys[0] : (keys as any);
}

// bulkReadItems reads each document back by its partition key and checks it.
export async function bulkReadItems(container: Container, documents: any[], partitionKeyDef: any): Promise<void> {
  for (const document of documents) {
    const { resource } = await container.item(document.id, keyOf(document, partitionKeyDef)).read();
    assert.deepStrictEqual(resource, document);
  }
}

// bulkReplaceItems replaces each document with itself and checks the result.
export async function bulkReplaceItems(container: Container, documents: any[], partitionKeyDef: any): Promise<any[]> {
  return Promise.all(
    documents.map(async (document) => {
      const { resource: doc } = await container.item(document.id, keyOf(document, partitionKeyDef)).replace(document);
      const { _etag: _1, _ts: _2, ...expected } = document;
      const { _etag: _3, _ts: _4, ...actual } = doc;
      assert.deepStrictEqual(expected, actual);
      return doc;
    }),
  );
}

// bulkDeleteItems deletes the documents.
export async function bulkDeleteItems(container: Container, documents: any[], partitionKeyDef: any): Promise<void> {
  await Promise.all(documents.map((d) => container.item(d.id, keyOf(d, partitionKeyDef)).delete()));
}

// bulkQueryItemsWithPartitionKey finds each document alone with the query and its parameters.
export async function bulkQueryItemsWithPartitionKey(
  container: Container,
  documents: any[],
  query: string,
  parameterGenerator: (doc: any) => { name: string; value: any }[],
): Promise<void> {
  for (const document of documents) {
    const parameters = parameterGenerator(document);
    if (parameters.some((p) => p.value === undefined)) continue;
    const { resources } = await container.items.query({ query, parameters }).fetchAll();
    assert.equal(resources.length, 1, `Expected exactly 1 document, doc: ${JSON.stringify(document)}`);
    assert.equal(JSON.stringify(resources[0]), JSON.stringify(document));
  }
}

// createOrUpsertItem creates body, or upserts it.
export async function createOrUpsertItem(container: Container, body: any, options: RequestOptions, isUpsertTest: boolean): Promise<any> {
  return isUpsertTest ? container.items.upsert(body, options) : container.items.create(body, options);
}

// replaceOrUpsertItem replaces body, or upserts it.
export async function replaceOrUpsertItem(
  container: Container,
  body: any,
  options: RequestOptions,
  isUpsertTest: boolean,
  partitionKey?: PartitionKey,
): Promise<any> {
  return isUpsertTest ? container.items.upsert(body, options) : container.item(body.id, partitionKey).replace(body, options);
}

// createOrUpsertUser creates the user, or upserts it.
export function createOrUpsertUser(database: Database, body: UserDefinition, options: RequestOptions, isUpsertTest: boolean): Promise<any> {
  return isUpsertTest ? database.users.upsert(body, options) : database.users.create(body, options);
}

// createOrUpsertPermission creates the permission, or upserts it.
export function createOrUpsertPermission(user: User, body: PermissionDefinition, options: RequestOptions, isUpsertTest: boolean): Promise<any> {
  return isUpsertTest ? user.permissions.upsert(body, options) : user.permissions.create(body, options);
}

// replaceOrUpsertPermission replaces the permission, or upserts it.
export function replaceOrUpsertPermission(user: User, body: PermissionDefinition, options: RequestOptions, isUpsertTest: boolean): Promise<any> {
  return isUpsertTest ? user.permissions.upsert(body, options) : user.permission(body.id).replace(body, options);
}

// assertThrowsAsync fails unless test rejects (with an error of the class given).
export async function assertThrowsAsync(test: () => Promise<any>, error?: any): Promise<string> {
  try {
    await test();
  } catch (e: any) {
    if (!error || e instanceof error) return "everything is fine";
  }
  throw new assert.AssertionError({ message: "Missing rejection" + (error ? " with " + error.name : "") });
}

// testForDiagnostics runs the callback; the SDK's own version then checks the
// SDK's client-side diagnostics object (timings, retries, metadata calls), which
// no server affects: here only that it is there.
export async function testForDiagnostics<T extends () => Promise<any>>(
  callback: T,
  _spec: any,
  _parallelExecutions: boolean = false,
): Promise<any> {
  const response = await callback();
  assert.ok(response.diagnostics, "Diagnostics object should not be undefined or null, in Response object");
  return response;
}

// CosmosDiagnosticsTestSpec is what the SDK's own helper checks the SDK's
// client-side diagnostics against.
export type CosmosDiagnosticsTestSpec = any;

// validateDiagnostics checks that diagnostics are there; the SDK's own
// version then checks their contents (timings, retries, gateway
// statistics), which no server affects.
export function validateDiagnostics(diagnostics: any, _spec: any, _parallelExecutions: boolean): void {
  assert.ok(diagnostics, "Diagnostics object should not be undefined or null");
}
