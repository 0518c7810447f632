// Package sdktest runs the official Azure Cosmos DB Go SDK (azcosmos)
// against lethe's REST front (github.com/lethedb/lethe/cosmosrest) served
// by httptest: what works through the SDK works for programs that use it.
// Every test runs twice: over HTTPS, and again under TestInProcess through
// lethetest's in-process transport (both.go), so that the two cannot drift.
package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// env is one handler served over TLS, or in process, and an SDK client of
// it.
type env struct {
	client    *azcosmos.Client
	transport policy.Transporter // trusts the server's certificate, or serves in process
	status    statusCounter
}

// statusCounter counts the responses of each status the server sent.
type statusCounter struct{ n [600]atomic.Int64 }

func (s *statusCounter) count(code int) int64 { return s.n[code].Load() }

type countingWriter struct {
	http.ResponseWriter
	s *statusCounter
}

func (w countingWriter) WriteHeader(code int) {
	if code > 0 && code < len(w.s.n) {
		w.s.n[code].Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

func newEnv(t *testing.T, cfg cosmosrest.Config) *env {
	t.Helper()
	h, err := cosmosrest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{}
	url, tr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(countingWriter{w, &e.status}, r)
	}))
	e.transport = tr
	cred, err := azcosmos.NewKeyCredential(cosmosrest.EmulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	e.client, err = azcosmos.NewClientWithKey(url, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: e.transport},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// allPages reads every page of p, failing the test on an error.
func allPages[T any](t *testing.T, p *runtime.Pager[T]) []T {
	t.Helper()
	var pages []T
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
	}
	return pages
}

// container creates a database and a container in it.
func (e *env) container(t *testing.T, props azcosmos.ContainerProperties, o *azcosmos.CreateContainerOptions) *azcosmos.ContainerClient {
	t.Helper()
	ctx := context.Background()
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusConflict {
			t.Fatal(err)
		}
	}
	db, err := e.client.NewDatabase("db")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateContainer(ctx, props, o); err != nil {
		t.Fatal(err)
	}
	c, err := db.NewContainer(props.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// status returns the HTTP status of an SDK error, or 0.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// errorMessage is the message in the body of the response err carries.
func errorMessage(t *testing.T, err error) string {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%v is not a response", err)
	}
	var body struct{ Message string }
	if b, rerr := io.ReadAll(re.RawResponse.Body); rerr != nil || json.Unmarshal(b, &body) != nil {
		t.Fatalf("the body of %v: %s, %v", err, b, rerr)
	}
	return body.Message
}

func ptr[T any](v T) *T { return &v }

func item(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDatabasesAndContainers(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	for _, id := range []string{"one", "two"} {
		resp, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.DatabaseProperties.ID != id || resp.DatabaseProperties.ResourceID == "" || resp.DatabaseProperties.ETag == nil {
			t.Errorf("created %+v", resp.DatabaseProperties)
		}
	}
	_, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "one"}, nil)
	if status(err) != http.StatusConflict {
		t.Errorf("second create: %v, want 409", err)
	}
	var ids []string
	for _, page := range allPages(t, e.client.NewQueryDatabasesPager("SELECT * FROM dbs d", nil)) {
		for _, d := range page.Databases {
			ids = append(ids, d.ID)
		}
	}
	if fmt.Sprint(ids) != "[one two]" {
		t.Errorf("databases %v", ids)
	}

	db, _ := e.client.NewDatabase("one")
	props := azcosmos.ContainerProperties{
		ID:                     "c",
		DefaultTimeToLive:      ptr[int32](3600),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}, Version: 2},
	}
	cr, err := db.CreateContainer(ctx, props, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cr.ContainerProperties
	if got.DefaultTimeToLive == nil || *got.DefaultTimeToLive != 3600 || got.PartitionKeyDefinition.Kind != azcosmos.PartitionKeyKindHash ||
		got.PartitionKeyDefinition.Paths[0] != "/tenant" || got.ResourceID == "" || got.IndexingPolicy == nil {
		t.Errorf("created container %+v", got)
	}
	if _, err := db.CreateContainer(ctx, props, nil); status(err) != http.StatusConflict {
		t.Errorf("second create: %v, want 409", err)
	}
	c, _ := db.NewContainer("c")
	read, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Replace: a shorter default TTL, then none (TTL off).
	rp := *read.ContainerProperties
	rp.DefaultTimeToLive = ptr[int32](60)
	rr, err := c.Replace(ctx, rp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rr.ContainerProperties.DefaultTimeToLive != 60 {
		t.Errorf("replaced TTL %v", *rr.ContainerProperties.DefaultTimeToLive)
	}
	rp.DefaultTimeToLive = nil
	rr, err = c.Replace(ctx, rp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rr.ContainerProperties.DefaultTimeToLive != nil {
		t.Errorf("TTL still on: %v", *rr.ContainerProperties.DefaultTimeToLive)
	}
	var names []string
	for _, page := range allPages(t, db.NewQueryContainersPager("SELECT * FROM c", nil)) {
		for _, p := range page.Containers {
			names = append(names, p.ID)
		}
	}
	if fmt.Sprint(names) != "[c]" {
		t.Errorf("containers %v", names)
	}
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 1 || ranges[0].MinInclusive != "" || ranges[0].MaxExclusive != "FF" {
		t.Errorf("feed ranges %+v", ranges)
	}
	if _, err := c.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, nil); status(err) != http.StatusNotFound {
		t.Errorf("read after delete: %v, want 404", err)
	}
	if _, err := db.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Read(ctx, nil); status(err) != http.StatusNotFound {
		t.Errorf("read deleted database: %v, want 404", err)
	}
}

func TestItemsExpire(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	e := newEnv(t, cosmosrest.Config{Clock: clock})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "sessions",
		DefaultTimeToLive:      ptr[int32](60),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}},
	}, nil)
	ada := azcosmos.NewPartitionKeyString("ada")
	for _, it := range []map[string]any{
		{"id": "default", "user": "ada"},
		{"id": "short", "user": "ada", "ttl": 5},
		{"id": "never", "user": "ada", "ttl": -1},
	} {
		resp, err := c.CreateItem(ctx, ada, item(t, it), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ETag == "" || resp.RequestCharge <= 0 || resp.SessionToken == nil {
			t.Errorf("create response: etag %q charge %v session %v", resp.ETag, resp.RequestCharge, resp.SessionToken)
		}
	}
	read := func(id string) int {
		_, err := c.ReadItem(ctx, ada, id, nil)
		if err != nil {
			if s := status(err); s != 0 {
				return s
			}
			t.Fatal(err)
		}
		return http.StatusOK
	}
	resp, err := c.ReadItem(ctx, ada, "short", nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Value, &doc); err != nil || doc["_ts"] != 1_700_000_000.0 || doc["_rid"] == nil || doc["ttl"] != 5.0 {
		t.Errorf("read %s", resp.Value)
	}
	clock.Advance(5 * time.Second)
	if s := read("short"); s != http.StatusNotFound {
		t.Errorf("short after 5s: %d, want 404", s)
	}
	if s := read("default"); s != http.StatusOK {
		t.Errorf("default after 5s: %d", s)
	}
	// Upsert over the expired item creates it anew.
	up, err := c.UpsertItem(ctx, ada, item(t, map[string]any{"id": "short", "user": "ada", "ttl": 5}), nil)
	if err != nil || up.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("upsert over an expired item: %v", err)
	}
	clock.Advance(55 * time.Second)
	if s := read("default"); s != http.StatusNotFound {
		t.Errorf("default after 60s: %d, want 404", s)
	}
	if s := read("never"); s != http.StatusOK {
		t.Errorf("never: %d", s)
	}

	// The container's TTL changed through the SDK applies at once.
	props, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := *props.ContainerProperties
	p.DefaultTimeToLive = nil // off: nothing expires any more
	if _, err := c.Replace(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, ada, item(t, map[string]any{"id": "later", "user": "ada", "ttl": 1}), nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if s := read("later"); s != http.StatusOK {
		t.Errorf("with TTL off: %d", s)
	}
	p.DefaultTimeToLive = ptr[int32](-1) // on, no default: "later" expired an hour ago
	if _, err := c.Replace(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if s := read("later"); s != http.StatusNotFound {
		t.Errorf("with TTL on again: %d, want 404", s)
	}
	if s := read("never"); s != http.StatusOK {
		t.Errorf("never: %d", s)
	}
	// Queries never see expired items.
	pager := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", ada, nil)
	page, err := pager.NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || string(page.Items[0]) != "1" {
		t.Errorf("count of live items: %q", page.Items)
	}
}

func TestQueries(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "orders",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{
				{Path: "/tenant", Order: azcosmos.CompositeIndexAscending},
				{Path: "/total", Order: azcosmos.CompositeIndexDescending},
			}}},
	}, nil)
	if read, err := c.Read(ctx, nil); err != nil || len(read.ContainerProperties.IndexingPolicy.CompositeIndexes) != 1 ||
		read.ContainerProperties.IndexingPolicy.CompositeIndexes[0][1].Order != azcosmos.CompositeIndexDescending {
		t.Errorf("the composite index did not come back: %v", err)
	}
	for i := range 20 {
		tenant := []string{"a", "b", "c"}[i%3]
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(tenant),
			item(t, map[string]any{"id": fmt.Sprintf("o%02d", i), "tenant": tenant, "total": i}), nil); err != nil {
			t.Fatal(err)
		}
	}
	all := func(q string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) ([]string, int) {
		t.Helper()
		var out []string
		pages := 0
		pager := c.NewQueryItemsPager(q, pk, o)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			pages++
			for _, it := range page.Items {
				out = append(out, string(it))
			}
		}
		return out, pages
	}
	a := azcosmos.NewPartitionKeyString("a")
	// Parameters, several pages (continuation), one partition, ordered.
	got, pages := all("SELECT VALUE c.total FROM c WHERE c.total >= @min ORDER BY c.total DESC", a,
		&azcosmos.QueryOptions{PageSizeHint: 2, QueryParameters: []azcosmos.QueryParameter{{Name: "@min", Value: 5}}})
	if fmt.Sprint(got) != "[18 15 12 9 6]" || pages != 3 {
		t.Errorf("%d pages: %v", pages, got)
	}
	// Across partitions, a query the gateway passes through.
	got, _ = all("SELECT VALUE c.id FROM c WHERE c.total < 3", azcosmos.NewPartitionKey(), nil)
	if len(got) != 3 {
		t.Errorf("across partitions: %v", got)
	}
	// One partition.
	got, _ = all("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKeyString("b"), &azcosmos.QueryOptions{PageSizeHint: 2})
	if fmt.Sprint(got) != `["o01" "o04" "o07" "o10" "o13" "o16" "o19"]` {
		t.Errorf("partition b: %v", got)
	}
	// Aggregates, TOP, DISTINCT, ORDER BY: evaluated by lethe for one
	// partition (named by the partition key, or by a filter on it). Across
	// partitions, the gateway refuses them as Cosmos DB's does: this SDK
	// sends them without a query plan.
	for _, tc := range []struct{ q, want string }{
		{"SELECT VALUE COUNT(1) FROM c", "[7]"},
		{"SELECT VALUE MAX(c.total) FROM c", "[18]"},
		{"SELECT TOP 2 c.id FROM c ORDER BY c.total", `[{"id":"o00"} {"id":"o03"}]`},
		{"SELECT TOP 3 VALUE c.id FROM c ORDER BY c.tenant, c.total DESC", `["o18" "o15" "o12"]`},
		{"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.tenant DESC, c.total ASC", `["o00" "o03"]`},
		{"SELECT DISTINCT VALUE c.tenant FROM c", `["a"]`},
	} {
		if got, _ := all(tc.q, a, nil); fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %v, want %s", tc.q, got, tc.want)
		}
		// The service's text, then lethe's note: what a Go program can do.
		_, err := c.NewQueryItemsPager(tc.q, azcosmos.NewPartitionKey(), nil).NextPage(ctx)
		if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "cross partition query can not be directly served by the gateway") ||
			!strings.Contains(err.Error(), "as azcosmos, the Go SDK, does") || !strings.Contains(err.Error(), "azcosmos.NewPartitionKeyString") {
			t.Errorf("%s across partitions: %v", tc.q, err)
		}
	}
	// GROUP BY with an aggregate without VALUE: the service's other
	// refusal across partitions (substatus 0), served for one partition.
	groupBy := "SELECT c.tenant, COUNT(1) AS n FROM c GROUP BY c.tenant"
	if _, err := c.NewQueryItemsPager(groupBy, azcosmos.NewPartitionKey(), nil).NextPage(ctx); status(err) != http.StatusBadRequest ||
		!strings.HasPrefix(errorMessage(t, err), "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates. (lethe: ") ||
		!strings.Contains(err.Error(), "azcosmos.NewPartitionKeyString") {
		t.Errorf("GROUP BY across partitions: %v", err)
	}
	if got, _ := all(groupBy, a, nil); fmt.Sprint(got) != `[{"tenant":"a","n":7}]` {
		t.Errorf("GROUP BY of one partition: %v", got)
	}
	if got, _ := all("SELECT VALUE AVG(c.total) FROM c WHERE c.tenant = 'a'", azcosmos.NewPartitionKey(), nil); fmt.Sprint(got) != "[9]" {
		t.Errorf("an aggregate of the partition a filter names: %v", got)
	}
	// Index metrics, when asked for, and query metrics on every page.
	p := c.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.total = 4", azcosmos.NewPartitionKeyString("b"), &azcosmos.QueryOptions{PopulateIndexMetrics: true})
	page, err := p.NextPage(ctx)
	if err != nil || page.QueryMetrics == nil || !strings.Contains(*page.QueryMetrics, "outputDocumentCount=1;") || page.IndexMetrics == nil {
		t.Errorf("metrics: %v %v %v", err, page.QueryMetrics, page.IndexMetrics)
	}
	// An ORDER BY of several paths needs a composite index that serves it.
	_, err = c.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c.tenant, c.total", a, nil).NextPage(ctx)
	if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "does not have a corresponding composite index") {
		t.Errorf("ORDER BY without its composite index: %v", err)
	}
	// A continuation token resumes a new pager.
	b := azcosmos.NewPartitionKeyString("b")
	first := c.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c.id DESC", b, &azcosmos.QueryOptions{PageSizeHint: 4})
	page, err = first.NextPage(ctx)
	if err != nil || page.ContinuationToken == nil {
		t.Fatalf("first page: %v", err)
	}
	rest, _ := all("SELECT VALUE c.id FROM c ORDER BY c.id DESC", b, &azcosmos.QueryOptions{ContinuationToken: page.ContinuationToken})
	if fmt.Sprint(rest) != `["o07" "o04" "o01"]` {
		t.Errorf("resumed: %v", rest)
	}
	// A bad query is a 400 whose message is the service's list of errors,
	// with lethe's explanation after it.
	_, err = c.NewQueryItemsPager("SELECT * FROM c WHERE", azcosmos.NewPartitionKey(), nil).NextPage(ctx)
	const syntax = `Message: {"errors":[{"severity":"Error","location":{"start":21,"end":21},"code":"SC1002",` +
		`"message":"Syntax error, unexpected end-of-file."}]}` + "\r\nActivityId: "
	if msg := errorMessage(t, err); status(err) != http.StatusBadRequest || !strings.HasPrefix(msg, syntax) ||
		!strings.HasSuffix(msg, ", lethe: 1:22: expected an expression, found end of query") {
		t.Errorf("bad query: %v", err)
	}
}

func TestHierarchicalKeys(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID: "h",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
			Kind: azcosmos.PartitionKeyKindMultiHash, Paths: []string{"/tenant", "/user"}, Version: 2,
		},
	}, nil)
	for _, u := range []string{"ada", "bob"} {
		pk := azcosmos.NewPartitionKeyString("acme").AppendString(u)
		if _, err := c.CreateItem(ctx, pk, item(t, map[string]any{"id": "1", "tenant": "acme", "user": u}), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("acme").AppendString("bob"), "1", nil); err != nil {
		t.Fatal(err)
	}
	page, err := c.NewQueryItemsPager("SELECT VALUE c.user FROM c", azcosmos.NewPartitionKeyString("acme"), nil).NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 {
		t.Errorf("prefix query: %q", page.Items)
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.ReadItem(ctx, pk, "missing", nil); status(err) != http.StatusNotFound {
		t.Errorf("read missing: %v, want 404", err)
	}
	created, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p","n":1}`), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Value) == 0 {
		t.Error("EnableContentResponseOnWrite: no body")
	}
	plain, err := c.CreateItem(ctx, pk, []byte(`{"id":"2","pk":"p"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Value) != 0 {
		t.Errorf("default (minimal) write returned a body: %s", plain.Value)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p"}`), nil); status(err) != http.StatusConflict {
		t.Errorf("create twice: %v, want 409", err)
	}
	stale := azcore.ETag(`"0000000000000000"`)
	if _, err := c.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"p","n":2}`), &azcosmos.ItemOptions{IfMatchEtag: &stale}); status(err) != http.StatusPreconditionFailed {
		t.Errorf("replace with a stale etag: %v, want 412", err)
	}
	if _, err := c.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"p","n":2}`), &azcosmos.ItemOptions{IfMatchEtag: &created.ETag}); err != nil {
		t.Errorf("replace with the current etag: %v", err)
	}
	if _, err := c.DeleteItem(ctx, pk, "1", &azcosmos.ItemOptions{IfMatchEtag: &created.ETag}); status(err) != http.StatusPreconditionFailed {
		t.Errorf("delete with an old etag: %v, want 412", err)
	}
	if _, err := c.DeleteItem(ctx, pk, "1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"3","pk":"other"}`), nil); status(err) != http.StatusBadRequest {
		t.Errorf("mismatched partition key: %v, want 400", err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"3","pk":"p","ttl":0}`), nil); status(err) != http.StatusBadRequest {
		t.Errorf("ttl 0: %v, want 400", err)
	}
	db, _ := e.client.NewDatabase("nope")
	missing, _ := db.NewContainer("c")
	if _, err := missing.ReadItem(ctx, pk, "1", nil); status(err) != http.StatusNotFound {
		t.Errorf("item of a missing database: %v, want 404", err)
	}
	// A client with the wrong key gets 401.
	other, _ := azcosmos.NewKeyCredential("dGhpcyBpcyBub3QgdGhlIGtleQ==")
	bad, err := azcosmos.NewClientWithKey(e.client.Endpoint(), other, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: e.transport, Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "x"}, nil); err == nil {
		t.Error("the wrong key was accepted")
	}
	if e.status.count(http.StatusUnauthorized) == 0 {
		t.Error("no 401 sent for the wrong key")
	}
}

// TestServiceMessages checks that the errors azcosmos returns carry the
// service's error code, substatus and message, as programs that match on
// them (and the SDKs' own tests) expect.
func TestServiceMessages(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p"}`), nil); err != nil {
		t.Fatal(err)
	}
	db, _ := e.client.NewDatabase("db")
	gone, _ := db.NewContainer("gone")
	stale := azcore.ETag(`"0000000000000000"`)
	for _, tc := range []struct {
		name   string
		call   func() error
		code   string
		sub    string
		prefix string
	}{
		{"read of a missing item", func() error { _, err := c.ReadItem(ctx, pk, "missing", nil); return err },
			"NotFound", "0", "Entity with the specified id does not exist in the system."},
		{"item of a missing container", func() error { _, err := gone.ReadItem(ctx, pk, "1", nil); return err },
			"NotFound", "1003", "Owner resource does not exist"},
		{"missing container", func() error { _, err := gone.Read(ctx, nil); return err },
			"NotFound", "0", "Resource Not Found."},
		{"create twice", func() error { _, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p"}`), nil); return err },
			"Conflict", "0", "Entity with the specified id already exists in the system."},
		{"container created twice", func() error {
			_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
			return err
		}, "Conflict", "0", "Resource with specified id or name already exists."},
		{"stale etag", func() error {
			_, err := c.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"p"}`), &azcosmos.ItemOptions{IfMatchEtag: &stale})
			return err
		}, "PreconditionFailed", "0", "One of the specified pre-condition is not met."},
		{"mismatched partition key", func() error { _, err := c.CreateItem(ctx, pk, []byte(`{"id":"2","pk":"q"}`), nil); return err },
			"BadRequest", "1001", "PartitionKey extracted from document doesn't match the one specified in the header."},
		{"ttl 0", func() error { _, err := c.CreateItem(ctx, pk, []byte(`{"id":"2","pk":"p","ttl":0}`), nil); return err },
			"BadRequest", "0", "The input ttl '0' is invalid."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var re *azcore.ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("%v, want a response error", err)
			}
			body, _ := runtime.Payload(re.RawResponse)
			var m struct{ Code, Message string }
			_ = json.Unmarshal(body, &m)
			if m.Code != tc.code || re.RawResponse.Header.Get("x-ms-substatus") != tc.sub || !strings.HasPrefix(m.Message, tc.prefix) ||
				!strings.Contains(err.Error(), tc.prefix) {
				t.Errorf("%s, substatus %s, %q; want %s, %s, %q...", m.Code, re.RawResponse.Header.Get("x-ms-substatus"), m.Message, tc.code, tc.sub, tc.prefix)
			}
		})
	}
}

func TestThrottlingRetried(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{}) // the system clock: throughput refills in real time
	ctx := context.Background()
	// 400 RU/s (Cosmos DB's least): a bucket of 400 RU, and a create of
	// an item of 900,000 bytes costs 444.5, so each create after the first
	// is refused for about a second, however slow the machine, and retried
	// by the SDK after x-ms-retry-after-ms.
	tp := azcosmos.NewManualThroughputProperties(400)
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "small",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	var ids []string
	for i := range 3 {
		id := fmt.Sprint(i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(id), item(t, map[string]any{"id": id, "pad": strings.Repeat("x", 900_000)}), nil); err != nil {
			t.Fatalf("create %d: %v (the SDK should have retried the 429s)", i, err)
		}
		ids = append(ids, id)
	}
	if e.status.count(http.StatusTooManyRequests) == 0 {
		t.Fatal("no 429 sent: the test did not exercise throttling")
	}
	var got []string
	for _, page := range allPages(t, c.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), nil)) {
		for _, it := range page.Items {
			var s string
			_ = json.Unmarshal(it, &s)
			got = append(got, s)
		}
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("items %v, want %v", got, ids)
	}
	t.Logf("429s retried by the SDK: %d", e.status.count(http.StatusTooManyRequests))
}

func TestThroughput(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	tp := azcosmos.NewManualThroughputProperties(400)
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	resp, err := c.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := resp.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
		t.Errorf("throughput %d %v, want 400", n, ok)
	}
	if _, err := c.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1000), nil); err != nil {
		t.Fatal(err)
	}
	resp, err = c.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := resp.ThroughputProperties.ManualThroughput(); n != 1000 {
		t.Errorf("throughput after replace %d, want 1000", n)
	}
	db, _ := e.client.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "unlimited",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}}, nil); err != nil {
		t.Fatal(err)
	}
	unlimited, _ := db.NewContainer("unlimited")
	if _, err := unlimited.ReadThroughput(ctx, nil); status(err) != http.StatusNotFound {
		t.Errorf("throughput of an unlimited container: %v, want 404", err)
	}
	if _, err := c.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(450), nil); status(err) != http.StatusBadRequest {
		t.Errorf("450 RU/s (not in steps of 100): %v, want 400", err)
	}
	if _, err := c.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(4000), nil); status(err) != http.StatusBadRequest {
		t.Errorf("manual to autoscale by a replace: %v, want 400", err)
	}
	if _, err := db.ReadThroughput(ctx, nil); status(err) != http.StatusNotFound {
		t.Errorf("throughput of a database without: %v, want 404", err)
	}
}

// TestSharedAndAutoscaleThroughput: a database's shared throughput and a
// container's autoscale throughput, read and replaced with the SDK.
func TestSharedAndAutoscaleThroughput(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	tp := azcosmos.NewManualThroughputProperties(400)
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	db, _ := e.client.NewDatabase("shared")
	resp, err := db.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := resp.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
		t.Errorf("database throughput %d %v, want 400", n, ok)
	}
	if resp, err = db.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(500), nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := resp.ThroughputProperties.ManualThroughput(); n != 500 {
		t.Errorf("database throughput after replace %d, want 500", n)
	}
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "inner",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}}, nil); err != nil {
		t.Fatal(err)
	}
	inner, _ := db.NewContainer("inner")
	if _, err := inner.ReadThroughput(ctx, nil); status(err) != http.StatusNotFound {
		t.Errorf("throughput of a container drawing on its database's: %v, want 404", err)
	}

	auto := azcosmos.NewAutoscaleThroughputProperties(5000)
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "auto",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: &auto})
	resp, err = c.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := resp.ThroughputProperties.AutoscaleMaxThroughput(); !ok || n != 5000 {
		t.Errorf("autoscale maximum %d %v, want 5000", n, ok)
	}
	if n, _ := resp.ThroughputProperties.ManualThroughput(); n != 500 {
		t.Errorf("an idle autoscale container scaled to %d, want 500 (a tenth of its maximum)", n)
	}
	if resp, err = c.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(10000), nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := resp.ThroughputProperties.AutoscaleMaxThroughput(); n != 10000 {
		t.Errorf("autoscale maximum after replace %d, want 10000", n)
	}
	if _, err := c.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(1500), nil); status(err) != http.StatusBadRequest {
		t.Errorf("an autoscale maximum of 1500: %v, want 400", err)
	}
}

func TestReadManyItems(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}},
	}, nil)
	var want []azcosmos.ItemIdentity
	for i := range 6 {
		tenant := []string{"a", "b"}[i%2]
		id := fmt.Sprint(i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(tenant), item(t, map[string]any{"id": id, "tenant": tenant}), nil); err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			want = append(want, azcosmos.ItemIdentity{ID: id, PartitionKey: azcosmos.NewPartitionKeyString(tenant)})
		}
	}
	// One that is not there.
	want = append(want, azcosmos.ItemIdentity{ID: "9", PartitionKey: azcosmos.NewPartitionKeyString("a")})
	resp, err := c.ReadManyItems(ctx, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range resp.Items {
		var v struct{ ID string }
		if err := json.Unmarshal(it, &v); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
	}
	sort.Strings(ids)
	if fmt.Sprint(ids) != "[1 2 4 5]" {
		t.Errorf("read many: %v", ids)
	}
}

// TestChangeFeed reads the change feed with azcosmos's ReadChangeFeed over
// the container's feed range: from the beginning, on from the composite
// continuation, scoped to a partition key, and from a point in time.
func TestChangeFeed(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	e := newEnv(t, cosmosrest.Config{Clock: clock})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		DefaultTimeToLive:      ptr[int32](-1),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}},
	}, nil)
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges: %v %v", ranges, err)
	}
	write := func(user, id string, extra map[string]any) {
		t.Helper()
		doc := map[string]any{"id": id, "user": user}
		for k, v := range extra {
			doc[k] = v
		}
		if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(user), item(t, doc), nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(resp azcosmos.ChangeFeedResponse) []string {
		var s []string
		for _, it := range resp.Items {
			s = append(s, decode(t, it)["id"].(string))
		}
		return s
	}
	write("ada", "1", nil)
	write("bob", "2", map[string]any{"ttl": 10})
	write("ada", "1", map[string]any{"v": 2})

	first, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0]})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(first); fmt.Sprint(got) != "[2 1]" || first.Count != 2 || first.ContinuationToken == "" {
		t.Fatalf("from the beginning: %v (count %d, token %q)", got, first.Count, first.ContinuationToken)
	}
	if d := decode(t, first.Items[1]); d["v"] != 2.0 || d["_lsn"] == nil {
		t.Errorf("the latest version, with _lsn: %v", d)
	}
	// Nothing new: an empty page (the server answers 304), same position.
	idle, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &first.ContinuationToken})
	if err != nil || len(idle.Items) != 0 {
		t.Fatalf("caught up: %v %v", idle.Items, err)
	}
	// Expired items are not in the latest-version feed; new writes are.
	clock.Advance(10 * time.Second)
	write("bob", "3", nil)
	next, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &idle.ContinuationToken})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(next); fmt.Sprint(got) != "[3]" {
		t.Errorf("after the continuation: %v", got)
	}
	// Scoped to one partition key value.
	pk := azcosmos.NewPartitionKeyString("ada")
	ada, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], PartitionKey: &pk})
	if err != nil || fmt.Sprint(ids(ada)) != "[1]" {
		t.Errorf("partition ada: %v %v", ids(ada), err)
	}
	// From a point in time.
	since := clock.Now().Add(-time.Second)
	from, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], StartFrom: &since})
	if err != nil || fmt.Sprint(ids(from)) != "[3]" {
		t.Errorf("from a time: %v %v", ids(from), err)
	}
	// Page by page.
	var all []string
	opts := &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], MaxItemCount: 1}
	for range 5 {
		page, err := c.ReadChangeFeed(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 0 {
			break
		}
		all = append(all, ids(page)...)
		opts = &azcosmos.ChangeFeedOptions{Continuation: &page.ContinuationToken, MaxItemCount: 1}
	}
	if fmt.Sprint(all) != "[1 3]" {
		t.Errorf("page by page: %v", all)
	}
}

// decode unmarshals a document returned by the SDK.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("document %q: %v", b, err)
	}
	return m
}

func TestPatchItem(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	e := newEnv(t, cosmosrest.Config{Clock: clock})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		DefaultTimeToLive:      ptr[int32](-1),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	created, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p","n":1,"tags":["a"],"old":"x","gone":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	withBody := &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}

	ops := azcosmos.PatchOperations{}
	ops.AppendSet("/s", "y")
	ops.AppendAdd("/tags/-", "b")
	ops.AppendRemove("/gone")
	ops.AppendIncrement("/n", 41)
	ops.AppendReplace("/old", map[string]any{"k": 1})
	resp, err := c.PatchItem(ctx, pk, "1", ops, withBody)
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, resp.Value)
	if doc["s"] != "y" || doc["n"] != 42.0 || fmt.Sprint(doc["tags"]) != "[a b]" || fmt.Sprint(doc["old"]) != "map[k:1]" || doc["_rid"] == nil || doc["_self"] == nil {
		t.Errorf("patched: %s", resp.Value)
	}
	if _, ok := doc["gone"]; ok {
		t.Errorf("removed member still there: %s", resp.Value)
	}
	if resp.ETag == "" || resp.ETag == created.ETag || resp.RequestCharge <= 0 || resp.RawResponse.StatusCode != http.StatusOK {
		t.Errorf("patch response: etag %q (created %q) charge %v status %d", resp.ETag, created.ETag, resp.RequestCharge, resp.RawResponse.StatusCode)
	}
	read, err := c.ReadItem(ctx, pk, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if read.ETag != resp.ETag || decode(t, read.Value)["n"] != 42.0 {
		t.Errorf("read after patch: etag %q, %s", read.ETag, read.Value)
	}

	// The default: no body back.
	inc := azcosmos.PatchOperations{}
	inc.AppendIncrement("/n", 1)
	plain, err := c.PatchItem(ctx, pk, "1", inc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Value) != 0 || plain.ETag == "" {
		t.Errorf("minimal patch: body %q etag %q", plain.Value, plain.ETag)
	}

	// Conditions and If-Match.
	cond := inc
	cond.SetCondition("from c where c.n = 0")
	if _, err := c.PatchItem(ctx, pk, "1", cond, nil); status(err) != http.StatusPreconditionFailed {
		t.Errorf("patch whose condition does not hold: %v, want 412", err)
	}
	cond.SetCondition("from c where c.n = 43")
	if _, err := c.PatchItem(ctx, pk, "1", cond, nil); err != nil {
		t.Errorf("patch whose condition holds: %v", err)
	}
	if _, err := c.PatchItem(ctx, pk, "1", inc, &azcosmos.ItemOptions{IfMatchEtag: &resp.ETag}); status(err) != http.StatusPreconditionFailed {
		t.Errorf("patch with an old etag: %v, want 412", err)
	}
	cur, err := c.ReadItem(ctx, pk, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PatchItem(ctx, pk, "1", inc, &azcosmos.ItemOptions{IfMatchEtag: &cur.ETag}); err != nil {
		t.Errorf("patch with the current etag: %v", err)
	}
	if _, err := c.PatchItem(ctx, pk, "missing", inc, nil); status(err) != http.StatusNotFound {
		t.Errorf("patch of a missing item: %v, want 404", err)
	}
	bad := azcosmos.PatchOperations{}
	bad.AppendSet("/id", "2")
	if _, err := c.PatchItem(ctx, pk, "1", bad, nil); status(err) != http.StatusBadRequest {
		t.Errorf("patch of the id: %v, want 400", err)
	}
	tooMany := azcosmos.PatchOperations{}
	for range 11 {
		tooMany.AppendIncrement("/n", 1)
	}
	if _, err := c.PatchItem(ctx, pk, "1", tooMany, nil); status(err) != http.StatusBadRequest {
		t.Errorf("11 operations: %v, want 400", err)
	}
	if n := decode(t, mustRead(t, c, pk, "1").Value)["n"]; n != 45.0 {
		t.Errorf("n = %v after the refused patches, want 45", n)
	}

	// A ttl set through a patch makes the item expire; then it is missing
	// to patches too.
	ttl := azcosmos.PatchOperations{}
	ttl.AppendSet("/ttl", 5)
	if _, err := c.PatchItem(ctx, pk, "1", ttl, nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	mustRead(t, c, pk, "1")
	clock.Advance(time.Second)
	if _, err := c.ReadItem(ctx, pk, "1", nil); status(err) != http.StatusNotFound {
		t.Errorf("read after the patched ttl: %v, want 404", err)
	}
	if _, err := c.PatchItem(ctx, pk, "1", inc, nil); status(err) != http.StatusNotFound {
		t.Errorf("patch of an expired item: %v, want 404", err)
	}
}

func mustRead(t *testing.T, c *azcosmos.ContainerClient, pk azcosmos.PartitionKey, id string) azcosmos.ItemResponse {
	t.Helper()
	r, err := c.ReadItem(context.Background(), pk, id, nil)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return r
}

func batchStatuses(resp azcosmos.TransactionalBatchResponse) string {
	var s []string
	for _, r := range resp.OperationResults {
		s = append(s, fmt.Sprint(r.StatusCode))
	}
	return fmt.Sprint(s)
}

func TestTransactionalBatch(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	e := newEnv(t, cosmosrest.Config{Clock: clock})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "c",
		DefaultTimeToLive:      ptr[int32](-1),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	one, err := c.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"p","n":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"del","pk":"p"}`), nil); err != nil {
		t.Fatal(err)
	}

	// Mixed operations with a read: the SDK asks for bodies.
	b := c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"2","pk":"p"}`), nil)
	b.UpsertItem([]byte(`{"id":"3","pk":"p"}`), nil)
	b.ReadItem("1", nil)
	b.ReplaceItem("1", []byte(`{"id":"1","pk":"p","n":2}`), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &one.ETag})
	p := azcosmos.PatchOperations{}
	p.AppendIncrement("/n", 10)
	b.PatchItem("1", p, nil)
	b.DeleteItem("del", nil)
	resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.RawResponse.StatusCode != http.StatusOK || batchStatuses(resp) != "[201 201 200 200 200 204]" {
		t.Fatalf("batch: success %v status %d results %s", resp.Success, resp.RawResponse.StatusCode, batchStatuses(resp))
	}
	var sum float32
	for i, r := range resp.OperationResults {
		sum += r.RequestCharge
		if r.RequestCharge <= 0 {
			t.Errorf("result %d: charge %v", i, r.RequestCharge)
		}
		if i == 5 {
			if r.ResourceBody != nil {
				t.Errorf("delete result has a body: %s", r.ResourceBody)
			}
			continue
		}
		if r.ETag == "" || r.ResourceBody == nil {
			t.Errorf("result %d: etag %q body %s", i, r.ETag, r.ResourceBody)
			continue
		}
		if d := decode(t, r.ResourceBody); d["_rid"] == nil || d["_self"] == nil || azcore.ETag(d["_etag"].(string)) != r.ETag {
			t.Errorf("result %d: etag %q body %s", i, r.ETag, r.ResourceBody)
		}
	}
	if d := decode(t, resp.OperationResults[2].ResourceBody); d["n"] != 1.0 {
		t.Errorf("read in the batch: %s", resp.OperationResults[2].ResourceBody)
	}
	if d := decode(t, resp.OperationResults[4].ResourceBody); d["n"] != 12.0 {
		t.Errorf("patch in the batch: %s", resp.OperationResults[4].ResourceBody)
	}
	if resp.RequestCharge < sum-0.01 || resp.RequestCharge > sum+0.01 || resp.SessionToken == "" {
		t.Errorf("batch charge %v, results' sum %v; session %q", resp.RequestCharge, sum, resp.SessionToken)
	}
	if _, err := c.ReadItem(ctx, pk, "del", nil); status(err) != http.StatusNotFound {
		t.Errorf("deleted in the batch: %v", err)
	}
	// The etag a batch returns works as If-Match outside it.
	if _, err := c.ReplaceItem(ctx, pk, "2", []byte(`{"id":"2","pk":"p","v":1}`), &azcosmos.ItemOptions{IfMatchEtag: &resp.OperationResults[0].ETag}); err != nil {
		t.Errorf("replace with the batch's etag: %v", err)
	}

	// Without a read, bodies only on EnableContentResponseOnWrite.
	b = c.NewTransactionalBatch(pk)
	b.UpsertItem([]byte(`{"id":"4","pk":"p"}`), nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || !resp.Success || resp.OperationResults[0].ResourceBody != nil || resp.OperationResults[0].ETag == "" {
		t.Errorf("minimal batch: %v %+v", err, resp.OperationResults)
	}
	resp, err = c.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	if err != nil || !resp.Success || resp.OperationResults[0].ResourceBody == nil {
		t.Errorf("batch with content: %v %+v", err, resp.OperationResults)
	}

	// A failing operation: Success false, its status, 424 for the others,
	// nothing applied.
	b = c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"new","pk":"p"}`), nil)
	set := azcosmos.PatchOperations{}
	set.AppendSet("/n", 0)
	b.PatchItem("1", set, nil)
	b.CreateItem([]byte(`{"id":"2","pk":"p"}`), nil)
	b.DeleteItem("3", nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Success || resp.RawResponse.StatusCode != http.StatusMultiStatus || batchStatuses(resp) != "[424 424 409 424]" {
		t.Errorf("failed batch: success %v status %d results %s", resp.Success, resp.RawResponse.StatusCode, batchStatuses(resp))
	}
	if _, err := c.ReadItem(ctx, pk, "new", nil); status(err) != http.StatusNotFound {
		t.Errorf("created by a failed batch: %v", err)
	}
	mustRead(t, c, pk, "3")
	if n := decode(t, mustRead(t, c, pk, "1").Value)["n"]; n != 12.0 {
		t.Errorf("patched by a failed batch: n = %v", n)
	}
	stale := azcore.ETag(`"0000000000000000"`)
	b = c.NewTransactionalBatch(pk)
	b.ReplaceItem("1", []byte(`{"id":"1","pk":"p"}`), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || resp.Success || batchStatuses(resp) != "[412]" {
		t.Errorf("stale If-Match in a batch: %v %s", err, batchStatuses(resp))
	}

	// An expired item is missing in a batch as outside one.
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"short","pk":"p","ttl":5}`), nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	b = c.NewTransactionalBatch(pk)
	b.ReadItem("short", nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || resp.Success || batchStatuses(resp) != "[404]" {
		t.Errorf("read of an expired item in a batch: %v %s", err, batchStatuses(resp))
	}
	b = c.NewTransactionalBatch(pk)
	b.PatchItem("short", set, nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || resp.Success || batchStatuses(resp) != "[404]" {
		t.Errorf("patch of an expired item in a batch: %v %s", err, batchStatuses(resp))
	}
	b = c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"short","pk":"p"}`), nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || !resp.Success || batchStatuses(resp) != "[201]" {
		t.Errorf("create over an expired item in a batch: %v %s", err, batchStatuses(resp))
	}
	mustRead(t, c, pk, "short")

	// Over 100 operations: the whole batch is refused.
	b = c.NewTransactionalBatch(pk)
	for i := range 101 {
		b.CreateItem(item(t, map[string]any{"id": fmt.Sprint("m", i), "pk": "p"}), nil)
	}
	if _, err := c.ExecuteTransactionalBatch(ctx, b, nil); status(err) != http.StatusBadRequest {
		t.Errorf("101 operations: %v, want 400", err)
	}
	if _, err := c.ReadItem(ctx, pk, "m0", nil); status(err) != http.StatusNotFound {
		t.Errorf("created by a refused batch: %v", err)
	}
}

// TestSearchPolicies: a container's vector embedding and full-text policies,
// with their vector and full-text indexes, go in through azcosmos and come
// back as they were sent; a change Cosmos DB refuses is a 400.
func TestSearchPolicies(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	vectors := &azcosmos.VectorEmbeddingPolicy{VectorEmbeddings: []azcosmos.VectorEmbedding{
		{Path: "/embedding", DataType: azcosmos.VectorDataTypeFloat32, DistanceFunction: azcosmos.VectorDistanceFunctionCosine, Dimensions: 3},
		{Path: "/image", DataType: azcosmos.VectorDataTypeUint8, DistanceFunction: azcosmos.VectorDistanceFunctionEuclidean, Dimensions: 2048},
	}}
	text := &azcosmos.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []azcosmos.FullTextPath{
		{Path: "/title", Language: "en-US"}, {Path: "/description", Language: "es-ES"},
	}}
	vindexes := []azcosmos.VectorIndex{{Path: "/embedding", Type: azcosmos.VectorIndexTypeFlat}, {Path: "/image", Type: azcosmos.VectorIndexTypeDiskANN}}
	tindexes := []azcosmos.FullTextIndex{{Path: "/title"}, {Path: "/description"}}
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "search",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		VectorEmbeddingPolicy:  vectors,
		FullTextPolicy:         text,
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/embedding/*"}},
			VectorIndexes: vindexes, FullTextIndexes: tindexes},
	}, nil)
	read, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := read.ContainerProperties
	if !reflect.DeepEqual(got.VectorEmbeddingPolicy, vectors) || !reflect.DeepEqual(got.FullTextPolicy, text) ||
		!reflect.DeepEqual(got.IndexingPolicy.VectorIndexes, vindexes) || !reflect.DeepEqual(got.IndexingPolicy.FullTextIndexes, tindexes) {
		t.Errorf("read back %+v %+v %+v %+v", got.VectorEmbeddingPolicy, got.FullTextPolicy, got.IndexingPolicy.VectorIndexes, got.IndexingPolicy.FullTextIndexes)
	}

	changed := *got
	changed.VectorEmbeddingPolicy = &azcosmos.VectorEmbeddingPolicy{VectorEmbeddings: slices.Clone(vectors.VectorEmbeddings)}
	changed.VectorEmbeddingPolicy.VectorEmbeddings[1].Dimensions = 1024
	if _, err := c.Replace(ctx, changed, nil); status(err) != http.StatusBadRequest {
		t.Errorf("changing an embedding's dimensions: %v, want 400", err)
	}
	changed.VectorEmbeddingPolicy.VectorEmbeddings = vectors.VectorEmbeddings[:1]
	changed.IndexingPolicy.VectorIndexes = vindexes[:1]
	rr, err := c.Replace(ctx, changed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rr.ContainerProperties.VectorEmbeddingPolicy.VectorEmbeddings); n != 1 {
		t.Errorf("after removing a vector path: %d embeddings", n)
	}
}

// TestFullTextSearch: FullTextContains, FullTextContainsAll and
// FullTextContainsAny through azcosmos, on a container whose full-text
// policy makes /title English (stemmed, stop words dropped) and
// /description Spanish (folded only); a parameter as the search string.
func TestFullTextSearch(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "texts",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		FullTextPolicy: &azcosmos.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []azcosmos.FullTextPath{
			{Path: "/title", Language: "en-US"}, {Path: "/description", Language: "es-ES"},
		}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}, FullTextIndexes: []azcosmos.FullTextIndex{{Path: "/title"}, {Path: "/description"}}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for _, it := range []map[string]any{
		{"id": "1", "pk": "p", "title": "Azure Cosmos DB Full Text Search", "description": "Búsqueda de texto completo"},
		{"id": "2", "pk": "p", "title": "Not related", "description": "Nada que ver"},
		{"id": "3", "pk": "p", "title": "Searching the mountains by bicycle", "description": "Bicicletas de montaña"},
	} {
		if _, err := c.CreateItem(ctx, pk, item(t, it), nil); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{
		`SELECT VALUE c.id FROM c WHERE FullTextContains(c.title, "search") OR FullTextContains(c.description, "search")`: `"1","3"`,
		`SELECT VALUE c.id FROM c WHERE FullTextContainsAll(c.title, @term, "mountain")`:                                  `"3"`,
		`SELECT VALUE c.id FROM c WHERE FullTextContainsAny(c.description, "BÚSQUEDA", "bicicleta")`:                      `"1"`,
		`SELECT VALUE c.id FROM c WHERE NOT FullTextContains(c.title, "the")`:                                             `"1","2","3"`,
	} {
		var got []string
		for _, page := range allPages(t, c.NewQueryItemsPager(q, pk, &azcosmos.QueryOptions{
			QueryParameters: []azcosmos.QueryParameter{{Name: "@term", Value: "searches"}}})) {
			for _, it := range page.Items {
				got = append(got, string(it))
			}
		}
		if s := strings.Join(got, ","); s != want {
			t.Errorf("%s: got %s, want %s", q, s, want)
		}
	}
}

// TestVectorAndRankedSearch: through azcosmos, in one partition: a TOP k
// vector search, most similar first by the policy's distance function
// (euclidean for /image), with the score projected; ORDER BY RANK
// FullTextScore and a hybrid RRF. Across partitions the gateway refuses
// them, as Cosmos DB's does, this SDK sending them without a query plan.
func TestVectorAndRankedSearch(t *testing.T) {
	e := newEnv(t, cosmosrest.Config{})
	ctx := context.Background()
	c := e.container(t, azcosmos.ContainerProperties{
		ID:                     "vectors",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		VectorEmbeddingPolicy: &azcosmos.VectorEmbeddingPolicy{VectorEmbeddings: []azcosmos.VectorEmbedding{
			{Path: "/embedding", DataType: azcosmos.VectorDataTypeFloat32, DistanceFunction: azcosmos.VectorDistanceFunctionCosine, Dimensions: 3},
			{Path: "/image", DataType: azcosmos.VectorDataTypeUint8, DistanceFunction: azcosmos.VectorDistanceFunctionEuclidean, Dimensions: 2},
		}},
		FullTextPolicy: &azcosmos.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []azcosmos.FullTextPath{{Path: "/title", Language: "en-US"}}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}, ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/embedding/*"}},
			VectorIndexes:   []azcosmos.VectorIndex{{Path: "/embedding", Type: azcosmos.VectorIndexTypeFlat}},
			FullTextIndexes: []azcosmos.FullTextIndex{{Path: "/title"}}},
	}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for _, it := range []map[string]any{
		{"id": "1", "pk": "p", "title": "red fox", "embedding": []float64{1, 0, 0}, "image": []int{1, 1}},
		{"id": "2", "pk": "p", "title": "brown bear", "embedding": []float64{0, 1, 0}, "image": []int{200, 10}},
		{"id": "3", "pk": "p", "title": "red apples, red cherries", "embedding": []float64{0.9, 0.1, 0}, "image": []int{5, 5}},
	} {
		if _, err := c.CreateItem(ctx, pk, item(t, it), nil); err != nil {
			t.Fatal(err)
		}
	}
	params := []azcosmos.QueryParameter{{Name: "@q", Value: []float64{1, 0, 0}}, {Name: "@img", Value: []int{0, 0}}}
	for q, want := range map[string]string{
		`SELECT TOP 2 c.id, VectorDistance(c.embedding, @q) AS score FROM c ORDER BY VectorDistance(c.embedding, @q)`:       `{"id":"1","score":1},{"id":"3","score":0.9938837}`,
		`SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.image, @img)`:                                             `"1","3","2"`,
		`SELECT TOP 3 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`:                                        `"3","1","2"`,
		`SELECT TOP 3 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.title, "bear"), VectorDistance(c.embedding, @q))`: `"2","1","3"`,
	} {
		var got []string
		for _, page := range allPages(t, c.NewQueryItemsPager(q, pk, &azcosmos.QueryOptions{QueryParameters: params})) {
			for _, it := range page.Items {
				got = append(got, string(it))
			}
		}
		if s := strings.Join(got, ","); s != want {
			t.Errorf("%s: got %s, want %s", q, s, want)
		}
		_, err := c.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: params}).NextPage(ctx)
		if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "cross partition query can not be directly served by the gateway") {
			t.Errorf("%s across partitions: %v", q, err)
		}
	}
	_, err := c.NewQueryItemsPager(`SELECT FullTextScore(c.title, "red") AS s FROM c`, pk, nil).NextPage(ctx)
	if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "The FullTextScore function is only allowed in the ORDER BY RANK clause.") {
		t.Errorf("FullTextScore projected: %v", err)
	}
}

// TestGateways runs the SDK against both gateways of one handler: ids the
// routing gateway misreads in paths (a trailing space, '#', '/') are created
// through it but then refused with 401, and work through the compute
// gateway; the documents of reads and queries carry the same system
// properties; an explicit "ttl": null is refused as Cosmos DB refuses it.
func TestGateways(t *testing.T) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx := context.Background()
	cred, err := azcosmos.NewKeyCredential(cosmosrest.EmulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	clientAt := func(hd http.Handler) *azcosmos.Client {
		url, tr := serve(t, hd)
		client, err := azcosmos.NewClientWithKey(url, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		return client
	}
	rc, cc := clientAt(h), clientAt(h.ComputeGateway())
	if _, err := rc.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, err := rc.NewDatabase("db")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	routing, err := rc.NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	compute, err := cc.NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Test ", "a#b", "a/b", "plain"} {
		pk := azcosmos.NewPartitionKeyString(id)
		if _, err := routing.CreateItem(ctx, pk, item(t, map[string]any{"id": id, "pk": id}), nil); err != nil {
			t.Fatalf("create %q: %v", id, err)
		}
		_, err := routing.ReadItem(ctx, pk, id, nil)
		if want := map[bool]int{true: 0, false: http.StatusUnauthorized}[id == "plain"]; status(err) != want {
			t.Errorf("routing gateway, read %q: %v, want status %d", id, err, want)
		}
		read, err := compute.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Fatalf("compute gateway, read %q: %v", id, err)
		}
		pages := allPages(t, compute.NewQueryItemsPager("SELECT * FROM c WHERE c.id = @id", pk, &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: id}}}))
		if len(pages) == 0 || len(pages[0].Items) != 1 {
			t.Fatalf("query of %q: %v", id, pages)
		}
		got, want := decode(t, pages[0].Items[0]), decode(t, read.Value)
		if got["_rid"] == nil || got["_rid"] != want["_rid"] || got["_self"] != want["_self"] || got["_attachments"] != "attachments/" {
			t.Errorf("%q: query %v, read %v", id, got, want)
		}
	}
	_, err = compute.CreateItem(ctx, azcosmos.NewPartitionKeyString("x"), []byte(`{"id":"x","pk":"x","ttl":null}`), nil)
	if status(err) != http.StatusBadRequest {
		t.Errorf("\"ttl\": null: %v, want 400", err)
	}
}
