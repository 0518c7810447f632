package lethe_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// The item rules beyond JSON's grammar, seen through the public API (the
// parser itself is tested in scan_test.go).

// itemTestContainer opens a store with one container holding the item
// {"id":"a","v":1}.
func itemTestContainer(t *testing.T) *lethe.Container {
	t.Helper()
	c, _ := newContainer(t, 100)
	create(t, c, `{"id":"a","v":1}`)
	return c
}

// mustRefuse checks that create, upsert and replace of doc (over the item
// "a" of itemTestContainer) all fail with a 400 whose message contains msg,
// and change nothing.
func mustRefuse(t *testing.T, c *lethe.Container, doc, msg string) {
	t.Helper()
	before, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	items := c.Stats().Items
	for name, write := range map[string]func() (lethe.ItemResponse, error){
		"create": func() (lethe.ItemResponse, error) {
			return c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
		},
		"upsert": func() (lethe.ItemResponse, error) {
			return c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
		},
		"replace": func() (lethe.ItemResponse, error) {
			return c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(doc), nil)
		},
	} {
		r, err := write()
		var e *lethe.Error
		if !errors.Is(err, lethe.ErrBadRequest) || !errors.As(err, &e) || r.StatusCode != 400 {
			t.Fatalf("%s of %.80q: %v (status %d), want a 400", name, doc, err, r.StatusCode)
		}
		if !strings.Contains(e.Message, msg) {
			t.Fatalf("%s of %.80q: message %q does not contain %q", name, doc, e.Message, msg)
		}
	}
	after, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	if err != nil || string(after.Value) != string(before.Value) || c.Stats().Items != items {
		t.Fatalf("a refused write of %.80q changed the store: %s -> %s, %v", doc, before.Value, after.Value, err)
	}
}

// TestItemLoneSurrogates: an id or a member name with a \u escape of a lone
// surrogate is refused, so that two different ids (or names) can never
// decode to the same U+FFFD text. Values are kept verbatim.
func TestItemLoneSurrogates(t *testing.T) {
	t.Parallel()
	c := itemTestContainer(t)
	for _, doc := range []string{
		`{"id":"\ud800"}`, `{"id":"\udc00"}`, `{"id":"\udbff"}`, `{"id":"x\ud800\u0041"}`, `{"id":"\ud800\ud800"}`,
		`{"id":"\ude00\ud83d"}`, `{"id":"\ud83d\ude00\ude00"}`,
	} {
		mustRefuse(t, c, doc, "surrogate")
	}
	for _, doc := range []string{
		`{"id":"b","a\ud800":1}`, `{"a\udbff":2,"id":"b"}`, `{"id":"b","o":{"\udc00":1}}`, `{"id":"b","l":[1,{"x\udbffy":1}]}`,
	} {
		mustRefuse(t, c, doc, "surrogate")
	}
	// Two ids that used to collide: the second write must not overwrite the first.
	upsert(t, c, `{"id":"x\ud83d\ude00","v":1}`)
	mustRefuse(t, c, `{"id":"\ud800","v":2}`, "surrogate")
	mustRefuse(t, c, `{"id":"\udbff","v":3}`, "surrogate")
	if _, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "\uFFFD", nil); !errors.Is(err, lethe.ErrNotFound) {
		t.Fatalf("an item with the id U+FFFD exists: %v", err)
	}
	// Values may hold lone surrogates; they are stored as written.
	r := upsert(t, c, `{"id":"b","v":"\ud800","w":["\udc00"]}`)
	if !strings.Contains(string(r.Value), `"v":"\ud800","w":["\udc00"]`) {
		t.Fatalf("stored %s", r.Value)
	}
}

// TestItemNumberRange: a number whose magnitude is beyond a float64
// anywhere in the item is refused; one that underflows reads as zero.
func TestItemNumberRange(t *testing.T) {
	t.Parallel()
	c := itemTestContainer(t)
	for _, doc := range []string{
		`{"id":"b","n":1e400}`, `{"id":"b","n":-1e400}`, `{"id":"b","l":[1,2,1e309]}`, `{"id":"b","o":{"x":1.8e308}}`,
		`{"id":"b","n":1` + strings.Repeat("0", 400) + `}`, `{"id":"b","n":1e99999999999999999999}`,
		`{"n":[[[-17976931348623159e292]]],"id":"b"}`,
	} {
		mustRefuse(t, c, doc, "outside the range of a double")
	}
	for _, doc := range []string{
		`{"id":"b","n":1e-400,"m":-1e-400}`, `{"id":"b","n":1.7976931348623157e308}`, `{"id":"b","n":-1e308}`,
		`{"id":"b","n":0e999}`, `{"id":"b","n":1` + strings.Repeat("0", 300) + `}`,
	} {
		r := upsert(t, c, doc)
		if !strings.Contains(string(r.Value), doc[:len(doc)-1]) {
			t.Fatalf("stored %s", r.Value)
		}
	}
	// An underflowing number reads as zero.
	upsert(t, c, `{"id":"b","n":1e-400}`)
	for v, err := range c.QueryItems(ctx, `SELECT VALUE c.n FROM c WHERE c.id = "b"`, lethe.NewPartitionKey(), nil) {
		if err != nil || string(v) != "0" {
			t.Fatalf("%s, %v", v, err)
		}
	}
}

// TestItemDuplicateMembers: an object with two members of the same name
// (compared decoded) is refused at any depth.
func TestItemDuplicateMembers(t *testing.T) {
	t.Parallel()
	c := itemTestContainer(t)
	members := func(n int, prefix string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"%s%d":%d`, prefix, i, i)
		}
		return b.String()
	}
	for _, tc := range []struct{ doc, name string }{
		{`{"id":"b","x":1,"x":2}`, "x"}, {`{"id":"b","o":{"k":1,"k":2}}`, "k"}, {`{"id":"b","\u0078":1,"x":2}`, "x"},
		{`{"id":"b","x":1,"\u0078":2}`, "x"}, {`{"id":"b","_ts":1,"_ts":2}`, "_ts"}, {`{"_etag":"a","id":"b","_etag":"b"}`, "_etag"},
		{`{"id":"b","l":[{"k":1},{"k":1,"j":0,"k":1}]}`, "k"}, {`{"id":"b","é":1,"\u00e9":2}`, "é"},
		{`{"id":"b","😀":1,"\ud83d\ude00":2}`, "😀"}, {`{"id":"b","":1,"":2}`, "''"}, {`{"id":"b","a\/b":1,"a/b":2}`, "a/b"},
		{`{"id":"b","id":"b"}`, "id"}, {`{"id":"b","ttl":5,"ttl":5}`, "ttl"},
		{`{"id":"b"` + members(1000, "m") + `,"m999":1}`, "m999"},
		{`{"id":"b"` + members(1000, "m") + `,"m0":1}`, "m0"},
		{`{"id":"b","o":{"x":1` + members(100, "m") + `,"\u006d50":1}}`, "m50"},
		{`{"id":"b","o":{"x":{}` + members(40, "m") + `,"o":{"m1":1` + members(40, "m") + `}}}`, "m1"},
		{`{"id":"b","o":{"k":{"k":{"k":{"k":1,"j":2}},"j":1}},"o":1}`, "o"},
		{`{"id":"b","o":{"\u0078":0` + members(40, "m") + `,"x":1}}`, "x"}, // listed escaped, then in the map
		{`{"id":"b","o":{"x":0` + members(40, "m") + `,"\u0078":1}}`, "x"},
	} {
		mustRefuse(t, c, tc.doc, "'"+strings.Trim(tc.name, "'")+"' twice")
	}
	for _, doc := range []string{
		`{"id":"b","k":1,"o":{"k":1,"o":{"k":1}},"l":[{"k":1},{"k":1}]}`, `{"id":"b","\u0061":1,"\u0041":2,"a\u0000":3,"ab":4}`,
		`{"id":"b"` + members(1000, "m") + `}`, `{"id":"b","o":{` + members(100, "m")[1:] + `,"p":{` + members(100, "m")[1:] + `}}}`,
		`{"id":"b","é":1,"e":2,"\u00e8":3}`, `{"id":"b","x":{"x":{"x":{"x":{"x":{"x":[{"x":{"x":1}}]}}}}}}`,
	} {
		upsert(t, c, doc)
	}
}

// TestParseItemAllocs: typical items are parsed without allocating, small
// and middling objects at every depth included.
func TestParseItemAllocs(t *testing.T) {
	var nested strings.Builder
	for i := range 16 { // up to 24 top-level members are noted in place
		fmt.Fprintf(&nested, `,"member%d":{"a":%d,"b":[%d,"x",{"c":true,"d":null}],"e":"\u00e9"}`, i, i, i)
	}
	nested.WriteString(`,"wide":{"w0":0`)
	for i := range 30 {
		fmt.Fprintf(&nested, `,"w%d":{"x":%d}`, i+1, i)
	}
	nested.WriteString(`}`)
	for _, doc := range [][]byte{
		benchDoc("user-1", `,"ttl":3600`),
		[]byte(`{"id":"a","ttl":1.0e1,"n":1e-400,"big":1e300` + nested.String() + `}`),
	} {
		if err := lethe.ParseItem(doc); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { lethe.ParseItem(doc) }); n != 0 {
			t.Errorf("%.60s...: %v allocations", doc, n)
		}
	}
}

// TestIfMatchQuotedETag: azcosmos passes an azcore.ETag, which carries the
// quotes of an HTTP entity tag.
func TestIfMatchQuotedETag(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	r := create(t, c, `{"id":"a"}`)
	quoted := &lethe.ItemOptions{IfMatchEtag: `"` + r.ETag + `"`}
	r2, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","v":1}`), quoted)
	require.NoError(t, err)
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","v":2}`), &lethe.ItemOptions{IfMatchEtag: `"` + r2.ETag + `"`})
	require.NoError(t, err)
	for _, bad := range []string{`"` + r.ETag + `"`, `"` + r.ETag, r.ETag + `"`, `""`, `"`} {
		_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", &lethe.ItemOptions{IfMatchEtag: bad})
		require.ErrorIs(t, err, lethe.ErrPreconditionFailed, bad)
	}
}
