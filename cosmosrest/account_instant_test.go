package cosmosrest_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// The account-wide changes of these tests are made on a clock that moves
// one second at every reading (tickClock): a region that took its own
// reading for a resource's _ts would give it another _ts, and another ETag
// where the ETag derives from it, than the region that answered.

// instantAccount returns an account on a tickClock, its reaper off.
func instantAccount(t *testing.T) (*cosmosrest.Account, map[string]*client) {
	t.Helper()
	cfg := cosmosrest.AccountConfig{}
	cfg.Clock = &tickClock{}
	cfg.Reaper.Disabled = true
	return testAccount(t, cfg)
}

// sameEverywhere reads path in every region of a and fails unless each
// answers made's _ts and _etag (made is the answer of the region that
// made or replaced the resource). It returns the regions' readings.
func sameEverywhere(t *testing.T, a *cosmosrest.Account, cs map[string]*client, path string, made map[string]any) map[string]map[string]any {
	t.Helper()
	if made["_ts"] == nil || made["_etag"] == nil {
		t.Fatalf("%s has no _ts or _etag: %v", path, made)
	}
	got := map[string]map[string]any{}
	for _, name := range a.Regions() {
		g := must(t, cs[name].do("GET", path, nil), 200).json(t)
		if g["_ts"] != made["_ts"] || g["_etag"] != made["_etag"] {
			t.Errorf("%s has _ts %v, _etag %v in %s; the region that answered gave %v, %v", path, g["_ts"], g["_etag"], name, made["_ts"], made["_etag"])
		}
		got[name] = g
	}
	return got
}

// A database made through a read region has its _ts and ETag everywhere.
func TestAccountDatabaseSameETagEverywhere(t *testing.T) {
	a, cs := instantAccount(t)
	made := must(t, cs["West US"].do("POST", "/dbs", map[string]any{"id": "db"}), 201).json(t)
	sameEverywhere(t, a, cs, "/dbs/db", made)
}

// A user has one _ts and ETag in every region, when made and when
// replaced through another region with If-Match on that ETag; a replace
// on another ETag is made in none.
func TestAccountUserSameETagEverywhere(t *testing.T) {
	a, cs := instantAccount(t)
	createDB(t, cs["East US"], "db")
	made := must(t, cs["East US"].do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201).json(t)
	sameEverywhere(t, a, cs, "/dbs/db/users/ada", made)
	must(t, cs["West US"].do("PUT", "/dbs/db/users/ada", map[string]any{"id": "cy"}, "If-Match", `"0000000000000000"`), 412)
	replaced := must(t, cs["North Europe"].do("PUT", "/dbs/db/users/ada", map[string]any{"id": "bob"}, "If-Match", made["_etag"].(string)), 200).json(t)
	if replaced["_etag"] == made["_etag"] {
		t.Fatalf("the replace kept the ETag %v", made["_etag"])
	}
	sameEverywhere(t, a, cs, "/dbs/db/users/bob", replaced)
	for _, name := range a.Regions() {
		must(t, cs[name].do("GET", "/dbs/db/users/ada", nil), 404)
		must(t, cs[name].do("GET", "/dbs/db/users/cy", nil), 404)
	}
}

// A permission has one _ts and ETag in every region, when made and when
// replaced through another region with If-Match on that ETag; a replace
// on another ETag is made in none.
func TestAccountPermissionSameETagEverywhere(t *testing.T) {
	a, cs := instantAccount(t)
	east := cs["East US"]
	createDBColl(t, east)
	must(t, east.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
	const perm = "/dbs/db/users/ada/permissions/p"
	made := must(t, east.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"}), 201).json(t)
	sameEverywhere(t, a, cs, perm, made)
	must(t, east.do("PUT", perm, map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c"}, "If-Match", `"0000000000000000"`), 412)
	sameEverywhere(t, a, cs, perm, made)
	replaced := must(t, cs["West US"].do("PUT", perm, map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c"}, "If-Match", made["_etag"].(string)), 200).json(t)
	for name, g := range sameEverywhere(t, a, cs, perm, replaced) {
		if g["permissionMode"] != "All" {
			t.Errorf("the permission is %v in %s after the replace West US made", g["permissionMode"], name)
		}
	}
}

// A stored procedure, a trigger and a UDF have one _ts and ETag in every
// region, when made and when replaced through another region with
// If-Match on that ETag; a replace on another ETag is made in none.
func TestAccountScriptSameETagEverywhere(t *testing.T) {
	for _, tc := range []struct {
		kind  string // the path segment of the kind
		extra map[string]any
	}{
		{"sprocs", nil},
		{"triggers", map[string]any{"triggerType": "Pre", "triggerOperation": "All"}},
		{"udfs", nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			a, cs := instantAccount(t)
			east := cs["East US"]
			createDBColl(t, east)
			body := func(js string) map[string]any {
				b := map[string]any{"id": "s", "body": js}
				for k, v := range tc.extra {
					b[k] = v
				}
				return b
			}
			path := accColl + "/" + tc.kind + "/s"
			made := must(t, east.do("POST", accColl+"/"+tc.kind, body("function f() { return 1; }")), 201).json(t)
			sameEverywhere(t, a, cs, path, made)
			must(t, east.do("PUT", path, body("function f() { return 3; }"), "If-Match", `"0000000000000000"`), 412)
			replaced := must(t, cs["West US"].do("PUT", path, body("function f() { return 2; }"), "If-Match", made["_etag"].(string)), 200).json(t)
			for name, g := range sameEverywhere(t, a, cs, path, replaced) {
				if !strings.Contains(g["body"].(string), "return 2") {
					t.Errorf("%s has the body %q after the replace West US made", name, g["body"])
				}
			}
		})
	}
}

// A database's offer has one _ts and ETag in every region, when made
// and when replaced through another region.
func TestAccountOfferSameETagEverywhere(t *testing.T) {
	a, cs := instantAccount(t)
	db := must(t, cs["West US"].do("POST", "/dbs", map[string]any{"id": "shared"}, "x-ms-offer-throughput", "400"), 201).json(t)
	made := offerOf(t, cs["West US"], db["_rid"].(string))
	path := "/" + strings.TrimSuffix(made["_self"].(string), "/")
	sameEverywhere(t, a, cs, path, made)
	replaced := must(t, replaceOffer(cs["North Europe"], made, map[string]any{"offerThroughput": 500}), 200).json(t)
	for name, g := range sameEverywhere(t, a, cs, path, replaced) {
		if m, _ := offerFigures(g); m != 500 {
			t.Errorf("%s's offer has %v RU/s after the replace North Europe made", name, m)
		}
	}
}
