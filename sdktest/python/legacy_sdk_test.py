"""The legacy Azure Cosmos DB Python SDK (azure-cosmos 3.1.1, Debian's
python3-azure-cosmos) against lethe's REST front, cmd/lethe, built and
started as a user starts it (plain HTTP, on a free port).

That SDK addresses resources by the paths of their resource ids once it
has read them (each resource's _self: dbs/{rid}/colls/{rid}/docs/{rid}/),
signs such a request over the last resource id, lowercased, and picks a
resource token by the resource ids of the path. These tests go through
every kind of resource that way, as DocumentDB-era code does.

Run with Debian's Python, which has the package:
    /usr/bin/python3 sdktest/python/legacy_sdk_test.py
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

import azure.cosmos.cosmos_client as cosmos_client
import azure.cosmos.documents as documents
import azure.cosmos.errors as errors

# The Cosmos DB emulator's well-known key, lethe's default.
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


class Server:
    """cmd/lethe, built once into a temporary directory and started."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="lethe-python-")
        binary = os.path.join(self.dir, "lethe")
        subprocess.run(["go", "build", "-o", binary, "."], cwd=os.path.join(REPO, "cmd", "lethe"), check=True)
        self.url = "http://localhost:%d/" % free_port()
        self.proc = subprocess.Popen([binary, "-http", "-addr", self.url[len("http://"):-1]],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url, timeout=1)
            except urllib.error.HTTPError:
                break  # 401: it answers
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("cmd/lethe did not start")
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


server = None


def setUpModule():
    global server
    server = Server()


def tearDownModule():
    server.stop()


def client(auth):
    policy = documents.ConnectionPolicy()
    policy.EnableEndpointDiscovery = False
    return cosmos_client.CosmosClient(server.url, auth, policy)


class ResourceIdTest(unittest.TestCase):

    def setUp(self):
        self.c = client({"masterKey": EMULATOR_KEY})
        self.db = self.c.CreateDatabase({"id": "db " + self.id()})
        self.coll = self.c.CreateContainer(self.db["_self"], {
            "id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})

    def tearDown(self):
        self.c.DeleteDatabase(self.db["_self"])

    def assertStatus(self, status, fn, *args):
        with self.assertRaises(errors.HTTPFailure) as cm:
            fn(*args)
        self.assertEqual(cm.exception.status_code, status)

    def test_links_are_resource_ids(self):
        for res in (self.db, self.coll):
            self.assertTrue(res["_self"].endswith("/" + res["_rid"] + "/"), res)
        self.assertEqual(self.c.ReadDatabase(self.db["_self"])["id"], self.db["id"])
        self.assertEqual(self.c.ReadContainer(self.coll["_self"])["id"], "c")
        # The containers' feed and a create in it, by the database's _self.
        self.c.CreateContainer(self.db["_self"], {"id": "c2", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
        ids = sorted(c["id"] for c in self.c.ReadContainers(self.db["_self"]))
        self.assertEqual(ids, ["c", "c2"])

    def test_documents(self):
        link = self.coll["_self"]
        doc = self.c.CreateItem(link, {"id": "d1", "pk": "a", "n": 1})
        self.assertTrue(doc["_self"].startswith(link + "docs/"), doc["_self"])
        pk = {"partitionKey": "a"}
        self.assertEqual(self.c.ReadItem(doc["_self"], pk)["n"], 1)
        doc["n"] = 2
        self.assertEqual(self.c.ReplaceItem(doc["_self"], doc, pk)["n"], 2)
        found = list(self.c.QueryItems(link, "SELECT VALUE c.n FROM c WHERE c.id = 'd1'", pk))
        self.assertEqual(found, [2])
        # The same document by name.
        by_name = self.c.ReadItem("dbs/%s/colls/c/docs/d1" % self.db["id"], pk)
        self.assertEqual(by_name["_rid"], doc["_rid"])
        # A document created after the first read by resource id.
        later = self.c.CreateItem(link, {"id": "d2", "pk": "a"})
        self.assertEqual(self.c.ReadItem(later["_self"], pk)["id"], "d2")
        self.c.DeleteItem(doc["_self"], pk)
        self.assertStatus(404, self.c.ReadItem, doc["_self"], pk)

    def test_scripts(self):
        link = self.coll["_self"]
        sproc = self.c.CreateStoredProcedure(link, {
            "id": "s", "body": "function (x) { getContext().getResponse().setBody(x + 1) }"})
        self.assertEqual(self.c.ReadStoredProcedure(sproc["_self"])["id"], "s")
        self.assertEqual(self.c.ExecuteStoredProcedure(sproc["_self"], [41], {"partitionKey": "a"}), 42)
        trigger = self.c.CreateTrigger(link, {
            "id": "t", "body": "function () {}", "triggerType": "Pre", "triggerOperation": "All"})
        self.assertEqual(self.c.ReadTrigger(trigger["_self"])["id"], "t")
        udf = self.c.CreateUserDefinedFunction(link, {"id": "f", "body": "function (x) { return x }"})
        self.assertEqual(self.c.ReadUserDefinedFunction(udf["_self"])["id"], "f")

    def test_resource_tokens(self):
        doc = self.c.CreateItem(self.coll["_self"], {"id": "d1", "pk": "a"})
        user = self.c.CreateUser(self.db["_self"], {"id": "u"})
        self.assertEqual(self.c.ReadUser(user["_self"])["id"], "u")
        perm = self.c.CreatePermission(user["_self"], {
            "id": "p", "permissionMode": documents.PermissionMode.Read, "resource": self.coll["_self"]})
        self.assertEqual(self.c.ReadPermission(perm["_self"])["id"], "p")
        reader = client({"resourceTokens": {self.coll["_rid"]: perm["_token"]}})
        pk = {"partitionKey": "a"}
        self.assertEqual(reader.ReadItem(doc["_self"], pk)["id"], "d1")
        self.assertStatus(403, reader.DeleteItem, doc["_self"], pk)

    def test_unknown_resource_id(self):
        self.assertStatus(404, self.c.ReadContainer, self.db["_self"] + "colls/AAAAAAAAAIA=/")


class SuiteCasesTest(unittest.TestCase):
    """What the SDK's own suite (tag v3.1.1, run_suite.sh) found, kept
    here as lethe's: a container of several ranges (30,000 RU/s, three),
    its queries across them through the SDK's pipeline (the gateway's 400
    with substatus 1004 and the plan), its change feed by range, its
    offer and its ranges' statistics."""

    @classmethod
    def setUpClass(cls):
        cls.c = client({"masterKey": EMULATOR_KEY})
        cls.db = cls.c.CreateDatabase({"id": "suite cases"})
        cls.coll = cls.c.CreateContainer(cls.db["_self"], {
            "id": "multi", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}, {"offerThroughput": 30000})
        cls.link = cls.coll["_self"]
        for i in range(20):
            cls.c.CreateItem(cls.link, {"id": str(i), "pk": "p%d" % (i % 7), "n": i, "even": i % 2 == 0})

    @classmethod
    def tearDownClass(cls):
        cls.c.DeleteDatabase(cls.db["_self"])

    def query(self, text, **options):
        options["enableCrossPartitionQuery"] = True
        return list(self.c.QueryItems(self.link, text, options))

    def test_ranges(self):
        ranges = list(self.c._ReadPartitionKeyRanges(self.link))
        self.assertEqual([r["id"] for r in ranges], ["0", "1", "2"])

    def test_order_by_and_top_across_ranges(self):
        docs = self.query("SELECT * FROM c ORDER BY c.n DESC", maxItemCount=3)
        self.assertEqual([d["n"] for d in docs], list(range(19, -1, -1)))
        self.assertEqual(self.query("SELECT TOP 4 VALUE c.n FROM c ORDER BY c.n"), [0, 1, 2, 3])
        pages = self.c.QueryItems(self.link, "SELECT VALUE c.n FROM c ORDER BY c.n",
                                  {"enableCrossPartitionQuery": True, "maxItemCount": 6})
        sizes = []
        block = pages.fetch_next_block()
        while block:
            sizes.append(len(block))
            block = pages.fetch_next_block()
        self.assertEqual(sizes, [6, 6, 6, 2])

    def test_aggregates_across_ranges(self):
        self.assertEqual(self.query("SELECT VALUE COUNT(1) FROM c"), [20])
        self.assertEqual(self.query("SELECT VALUE SUM(c.n) FROM c WHERE c.even"), [90])
        self.assertEqual(self.query("SELECT VALUE MAX(c.n) FROM c"), [19])
        self.assertEqual(self.query("SELECT VALUE COUNT(1) FROM c WHERE c.pk = 'p1'"), [3])
        # Without VALUE, refused across partitions whatever the filter, as
        # the service refuses it (the suite's "SinglePartition SELECT").
        with self.assertRaises(errors.HTTPFailure) as cm:
            self.query("SELECT COUNT(1) FROM c WHERE c.pk = 'p1'")
        self.assertEqual(cm.exception.status_code, 400)

    def test_change_feed_by_range(self):
        coll = self.c.CreateContainer(self.db["_self"], {
            "id": "feed", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}, {"offerThroughput": 30000})
        link = coll["_self"]
        for i in range(10):
            self.c.CreateItem(link, {"id": str(i), "pk": "p%d" % i})
        seen, etags = [], {}
        for r in self.c._ReadPartitionKeyRanges(link):
            options = {"partitionKeyRangeId": r["id"], "isStartFromBeginning": True}
            seen += [d["id"] for d in self.c.QueryItemsChangeFeed(link, options)]
            etags[r["id"]] = self.c.last_response_headers["etag"]
        self.assertEqual(sorted(seen, key=int), [str(i) for i in range(10)])
        self.c.UpsertItem(link, {"id": "3", "pk": "p3", "again": True})
        changed = []
        for rid, etag in etags.items():
            changed += list(self.c.QueryItemsChangeFeed(link, {"partitionKeyRangeId": rid, "continuation": etag}))
        self.assertEqual([(d["id"], d.get("again")) for d in changed], [("3", True)])

    def test_offer_replace(self):
        # A container of its own: a raised throughput splits ranges (30,100
        # RU/s need 4), which the other tests' container must keep at 3.
        coll = self.c.CreateContainer(self.db["_self"], {
            "id": "offered", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}, {"offerThroughput": 30000})
        offers = list(self.c.QueryOffers(
            "SELECT * FROM root r WHERE r.offerResourceId = '%s'" % coll["_rid"]))
        self.assertEqual(len(offers), 1)
        offer = offers[0]
        self.assertEqual(offer["content"]["offerThroughput"], 30000)
        offer["content"]["offerThroughput"] = 30100
        self.assertEqual(self.c.ReplaceOffer(offer["_self"], offer)["content"]["offerThroughput"], 30100)
        # Neither id nor _rid: the service's 400 (the suite's test_offer_replace).
        nameless = dict(offer, id=None, _rid=None)
        with self.assertRaises(errors.HTTPFailure) as cm:
            self.c.ReplaceOffer(offer["_self"], nameless)
        self.assertEqual(cm.exception.status_code, 400)
        self.assertEqual(self.c.ReadOffer(offer["_self"])["content"]["offerThroughput"], 30100)

    def test_range_statistics(self):
        read = self.c.ReadContainer(self.link, {"populatePartitionKeyRangeStatistics": True, "populateQuotaInfo": True})
        stats = read["statistics"]
        self.assertEqual([s["id"] for s in stats], ["0", "1", "2"])
        self.assertEqual(sum(s["documentCount"] for s in stats), 20)
        self.assertIn("documentsCount=20", self.c.last_response_headers["x-ms-resource-usage"])
        self.assertNotIn("statistics", self.c.ReadContainer(self.link))

    def test_partition_key_extraction(self):
        # The suite's test_partitioned_collection_partition_key_extraction:
        # the SDK extracts a document's key itself; an object at the path
        # is undefined, sent as [{}], and the service stores it so.
        doc = {"id": "d", "address": {"street": "1 Microsoft Way", "state": "WA"}}
        state = self.c.CreateContainer(self.db["_self"], {
            "id": "state", "partitionKey": {"paths": ["/address/state"], "kind": "Hash"}})
        self.assertEqual(self.c.CreateItem(state["_self"], doc)["address"]["state"], "WA")
        with self.assertRaises(errors.HTTPFailure) as cm:
            self.c.CreateItem(state["_self"], dict(doc, id="d2"), {"partitionKey": "NY"})
        self.assertEqual(cm.exception.status_code, 400)

        for path in ("/address", "/address/state/city"):
            coll = self.c.CreateContainer(self.db["_self"], {
                "id": "by " + path.replace("/", " "), "partitionKey": {"paths": [path], "kind": "Hash"}})
            options = {}
            created = self.c.CreateItem(coll["_self"], doc, options)
            self.assertIs(options["partitionKey"], documents.Undefined)
            undefined = {"partitionKey": documents.Undefined}
            self.assertEqual(self.c.ReadItem(created["_self"], undefined)["address"], doc["address"])
            found = list(self.c.QueryItems(coll["_self"], "SELECT VALUE c.id FROM c", undefined))
            self.assertEqual(found, ["d"])
            with self.assertRaises(errors.HTTPFailure) as cm:
                self.c.ReadItem(created["_self"], {"partitionKey": None})
            self.assertEqual(cm.exception.status_code, 404)
            self.c.DeleteItem(created["_self"], undefined)
            with self.assertRaises(errors.HTTPFailure) as cm:
                self.c.ReadItem(created["_self"], undefined)
            self.assertEqual(cm.exception.status_code, 404)


if __name__ == "__main__":
    unittest.main()
