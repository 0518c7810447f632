package cosmosrest_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestServiceMessages checks each error the front returns against the
// status, substatus and message Cosmos DB answers with (the texts as the
// service, its documentation and the SDKs' tests have them). A message is
// the service's alone, or, where lethe explains more (detail), the
// service's followed by " (lethe: ...)".
func TestServiceMessages(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}, "kind": "Hash"}}), 201)
	pk := []string{"x-ms-documentdb-partitionkey", `["p"]`}
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"a","pk":"p","n":1}`, pk...), 201)
	// A container whose 400 RU/s are spent: the clock stands still.
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "t"}, "x-ms-offer-throughput", "400"), 201)
	for i := range 72 {
		must(t, c.do("POST", "/dbs/db/colls/t/docs", fmt.Sprintf(`{"id":"%d"}`, i)), 201)
	}
	batch := append([]string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"}, pk...)
	query := []string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}
	big := `{"id":"big","pk":"p","s":"` + strings.Repeat("x", lethe.MaxItemSize) + `"}`
	date := func(d time.Time) string { return d.UTC().Format(http.TimeFormat) }
	signed := func(key, method, typ, link string, when time.Time) []string {
		a, err := cosmosrest.SignRequest(key, method, typ, link, date(when))
		if err != nil {
			t.Fatal(err)
		}
		return []string{"Authorization", a, "x-ms-date", date(when)}
	}

	cases := []struct {
		name   string
		send   func() response
		status int
		sub    int
		msg    string // the service's message
		detail bool   // lethe's explanation follows it
	}{
		// 400
		{"partition key of the document", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b","pk":"q"}`, pk...)
		}, 400, 1001, "PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value", false},
		{"partition key of the container", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b","pk":"p"}`, "x-ms-documentdb-partitionkey", `["p","q"]`)
		}, 400, 1001, "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.", true},
		{"no partition key", func() response {
			return c.do("GET", "/dbs/db/colls/c/docs/a", nil)
		}, 400, 0, "PartitionKey value must be supplied for this operation.", false},
		{"no id", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"pk":"p"}`, pk...)
		}, 400, 0, "The input content is invalid because the required properties - 'id; ' - are missing", false},
		{"not JSON", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b",`, pk...)
		}, 400, 0, "The request payload is invalid. Ensure to provide a valid request payload.", true},
		{"ttl null", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b","pk":"p","ttl":null}`, pk...)
		}, 400, 0, "The input ttl 'null' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.", false},
		{"ttl 0", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b","pk":"p","ttl":0}`, pk...)
		}, 400, 0, "The input ttl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.", false},
		{"defaultTtl 0", func() response {
			return c.do("POST", "/dbs/db/colls", `{"id":"d","defaultTtl":0}`)
		}, 400, 0, "The input defaultTtl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.", false},
		{"database without id", func() response {
			return c.do("POST", "/dbs", `{}`)
		}, 400, 0, "The input content is invalid because the required properties - 'id; ' - are missing", false},
		{"container without id", func() response {
			return c.do("POST", "/dbs/db/colls", `{"defaultTtl":-1}`)
		}, 400, 0, "The input content is invalid because the required properties - 'id; ' - are missing", false},
		{"user body not JSON", func() response {
			return c.do("POST", "/dbs/db/users", `[`)
		}, 400, 0, "The request payload is invalid. Ensure to provide a valid request payload.", true},
		{"query body not JSON", func() response {
			return c.do("POST", "/dbs", `[`, query...)
		}, 400, 0, "The request payload is invalid. Ensure to provide a valid request payload.", true},
		{"batch of another partition key", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `[{"operationType":"Read","id":"a","partitionKey":"[\"q\"]"}]`, batch...)
		}, 400, 0, "One or more operations within the batch request have a different partition key value than the request.", true},
		{"cross-partition query", func() response {
			return c.query("/dbs/db/colls/c", "SELECT * FROM c", nil)
		}, 400, 0, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.", false},
		// 401, 403
		{"no authorization", func() response {
			return c.do("GET", "/dbs", nil, "Authorization", "")
		}, 401, 0, "Required Header authorization is missing. Ensure a valid Authorization token is passed.", false},
		{"wrong key", func() response {
			return c.do("GET", "/dbs", nil, signed("dGhpcyBpcyBub3QgdGhlIGtleQ==", "GET", "dbs", "", time.Now())...)
		}, 401, 0, "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. " +
			"For more info: https://aka.ms/cosmosdb-tsg-mac-signature. Server used the following payload to sign: 'get\ndbs\n\n", false},
		{"date an hour off", func() response {
			return c.do("GET", "/dbs", nil, signed(cosmosrest.EmulatorKey, "GET", "dbs", "", time.Now().Add(-time.Hour))...)
		}, 403, 0, "The authorization token is not valid at the current time. Please create another token and retry (token start time: ", false},
		// 404
		{"document", func() response {
			return c.do("GET", "/dbs/db/colls/c/docs/zz", nil, pk...)
		}, 404, 0, "Entity with the specified id does not exist in the system. More info: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"replace of no document", func() response {
			return c.do("PUT", "/dbs/db/colls/c/docs/zz", `{"id":"zz","pk":"p"}`, pk...)
		}, 404, 0, "Entity with the specified id does not exist in the system. More info: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"document of no container", func() response {
			return c.do("GET", "/dbs/db/colls/none/docs/a", nil, pk...)
		}, 404, 1003, "Owner resource does not exist", false},
		{"document of no database", func() response {
			return c.do("GET", "/dbs/none/colls/c/docs/a", nil, pk...)
		}, 404, 1003, "Owner resource does not exist", false},
		{"query of no container", func() response {
			return c.query("/dbs/db/colls/none", "SELECT * FROM c", nil, pk...)
		}, 404, 1003, "Owner resource does not exist", false},
		{"container", func() response {
			return c.do("GET", "/dbs/db/colls/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"container deleted", func() response {
			return c.do("DELETE", "/dbs/db/colls/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"database", func() response {
			return c.do("GET", "/dbs/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"database deleted", func() response {
			return c.do("DELETE", "/dbs/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"user", func() response {
			return c.do("GET", "/dbs/db/users/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"offer", func() response {
			return c.do("GET", "/offers/none", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"partition key range", func() response {
			return c.do("GET", "/dbs/db/colls/c/pkranges/7", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", false},
		{"no such path", func() response {
			return c.do("GET", "/dbs/db/colls/c/docs/a/b/c/d", nil)
		}, 404, 0, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found", true},
		// 405
		{"method", func() response {
			return c.do("PATCH", "/dbs", nil)
		}, 405, 0, "The requested verb is not supported.", false},
		// 409
		{"document exists", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", `{"id":"a","pk":"p"}`, pk...)
		}, 409, 0, "Entity with the specified id already exists in the system.", false},
		{"container exists", func() response {
			return c.do("POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]}}`)
		}, 409, 0, "Resource with specified id or name already exists.", false},
		{"database exists", func() response {
			return c.do("POST", "/dbs", `{"id":"db"}`)
		}, 409, 0, "Resource with specified id or name already exists.", false},
		// 412
		{"document's etag", func() response {
			return c.do("PUT", "/dbs/db/colls/c/docs/a", `{"id":"a","pk":"p"}`, append(pk, "If-Match", `"0000000000000000"`)...)
		}, 412, 0, "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed", false},
		{"container's etag", func() response {
			return c.do("PUT", "/dbs/db/colls/c", `{"id":"c","partitionKey":{"paths":["/pk"]}}`, "If-Match", `"0000000000000000"`)
		}, 412, 0, "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed", false},
		{"patch's condition", func() response {
			return c.do("PATCH", "/dbs/db/colls/c/docs/a", `{"condition":"FROM c WHERE c.n = 2","operations":[{"op":"set","path":"/m","value":1}]}`, pk...)
		}, 412, 0, "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed", true},
		// 413
		{"document over 2 MB", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", big, pk...)
		}, 413, 0, `Message: {"Errors":["Request size is too large"]}`, true},
		{"body over the limit", func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", big+strings.Repeat(" ", cosmosrest.MaxRequestSize), pk...)
		}, 413, 0, `Message: {"Errors":["Request size is too large"]}`, true},
		// 429
		{"throughput spent", func() response {
			return c.do("POST", "/dbs/db/colls/t/docs", `{"id":"over"}`)
		}, 429, 3200, "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if got := r.header.Get("x-ms-substatus"); got != strconv.Itoa(tc.sub) {
				t.Errorf("substatus %q, want %d", got, tc.sub)
			}
			m := r.json(t)
			msg, _ := m["message"].(string)
			if m["code"] == "" || !strings.HasPrefix(msg, tc.msg) {
				t.Fatalf("message %q, want it to begin with %q", msg, tc.msg)
			}
			rest := msg[len(tc.msg):]
			exact := !strings.HasSuffix(tc.msg, "'") && !strings.HasSuffix(tc.msg, "\n") && !strings.HasSuffix(tc.msg, ": ")
			switch {
			// lethe's explanation in parentheses, or, in the gateway's form
			// of a 413, on the line of the ActivityId.
			case tc.detail && (!strings.HasPrefix(rest, " (lethe: ") || !strings.HasSuffix(rest, ")")) &&
				!strings.HasPrefix(rest, "\r\nActivityId: "+r.header.Get("x-ms-activity-id")+", lethe: "):
				t.Errorf("message %q: no lethe explanation after the service's", msg)
			case !tc.detail && exact && rest != "":
				t.Errorf("message %q: more than the service's %q", msg, tc.msg)
			}
		})
	}
}

// TestBatchOperationMessages checks that an operation of a transactional
// batch that fails carries the service's substatus and message in its
// result, as a request of its own would.
func TestBatchOperationMessages(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	pk := []string{"x-ms-documentdb-partitionkey", `["p"]`}
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"a","pk":"p"}`, pk...), 201)
	batch := append([]string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"}, pk...)
	for _, tc := range []struct {
		name, op string
		status   float64
		msg      string
	}{
		{"create of an existing id", `{"operationType":"Create","resourceBody":{"id":"a","pk":"p"}}`, 409, "Entity with the specified id already exists in the system."},
		{"read of no document", `{"operationType":"Read","id":"zz"}`, 404, "Entity with the specified id does not exist in the system."},
		{"replace with another etag", `{"operationType":"Replace","id":"a","ifMatch":"\"0000000000000000\"","resourceBody":{"id":"a","pk":"p"}}`, 412, "One of the specified pre-condition is not met."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, c.do("POST", "/dbs/db/colls/c/docs", `[{"operationType":"Read","id":"a"},`+tc.op+`]`, batch...), 207)
			res := batchResults(t, r)
			if res[0]["statusCode"] != 424.0 || res[1]["statusCode"] != tc.status || !strings.HasPrefix(fmt.Sprint(res[1]["message"]), tc.msg) {
				t.Errorf("results %v", res)
			}
		})
	}
}
