package lethe_test

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// partitioned creates a container partitioned by paths, with default TTL def.
func partitioned(t testing.TB, s *lethe.Store, id string, def lethe.TTL, paths ...string) *lethe.Container {
	t.Helper()
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: id, DefaultTimeToLive: def,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: paths}})
	require.NoError(t, err)
	return c
}

func pkS(v string) lethe.PartitionKey { return lethe.NewPartitionKeyString(v) }

// readable reports whether (pk, id) can be read; any error but 404 fails.
func readable(t testing.TB, c *lethe.Container, pk lethe.PartitionKey, id string) bool {
	t.Helper()
	_, err := c.ReadItem(ctx, pk, id, nil)
	if err != nil {
		require.ErrorIs(t, err, lethe.ErrNotFound)
		return false
	}
	return true
}

func TestPartitionKeyDefinitionValidation(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	valid := []struct {
		def  lethe.PartitionKeyDefinition
		want lethe.PartitionKeyDefinition
	}{
		{lethe.PartitionKeyDefinition{}, lethe.PartitionKeyDefinition{}},
		{lethe.PartitionKeyDefinition{Paths: []string{"/tenant"}},
			lethe.PartitionKeyDefinition{Paths: []string{"/tenant"}, Kind: lethe.PartitionKeyKindHash, Version: 2}},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b"}},
			lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 2}},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b/c", "/d"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 1},
			lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b/c", "/d"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 1}},
		{lethe.PartitionKeyDefinition{Paths: []string{`/"a/b"/c`}},
			lethe.PartitionKeyDefinition{Paths: []string{`/"a/b"/c`}, Kind: lethe.PartitionKeyKindHash, Version: 2}},
		{lethe.PartitionKeyDefinition{Paths: []string{"/id"}, Kind: lethe.PartitionKeyKindHash},
			lethe.PartitionKeyDefinition{Paths: []string{"/id"}, Kind: lethe.PartitionKeyKindHash, Version: 2}},
	}
	for i, tc := range valid {
		c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: fmt.Sprint("v", i), PartitionKeyDefinition: tc.def})
		require.NoError(t, err, "%+v", tc.def)
		p, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.PartitionKeyDefinition)
	}

	invalid := []struct {
		def  lethe.PartitionKeyDefinition
		want string
	}{
		// The service's words, which @azure/cosmos's container spec looks for.
		{lethe.PartitionKeyDefinition{Paths: []string{"tenant"}}, "The partition key component definition path 'tenant' could not be accepted, failed near position '0'"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "b"}, Kind: lethe.PartitionKeyKindMultiHash}, "path 'b' could not be accepted"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/"}}, "empty segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{"//a"}}, "empty segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a/"}}, "empty segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a/*"}}, "quoted segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a[]"}}, "quoted segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/"a`}}, "quoted segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/"a"b`}}, "quoted segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/'a`}}, "no closing quote"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/'a'b`}}, "quoted segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/''`}}, "empty segment"},
		{lethe.PartitionKeyDefinition{Paths: []string{`/"a"`, "/'a'"}}, "twice"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b", "/c", "/d"}}, "over the limit of 3"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: lethe.PartitionKeyKindHash}, "MultiHash"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a"}, Kind: "Range"}, "unknown partition key kind"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a"}, Version: 3}, "unknown partition key version"},
		{lethe.PartitionKeyDefinition{Kind: lethe.PartitionKeyKindHash}, "no paths"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/_ts"}}, "system property"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/_etag"}}, "system property"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", "/a"}}, "twice"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/a", `/"a"`}}, "twice"},
	}
	for _, tc := range invalid {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "bad", PartitionKeyDefinition: tc.def})
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%+v", tc.def)
		assert.Contains(t, err.Error(), tc.want)
		_, err = s.Container("bad")
		require.ErrorIs(t, err, lethe.ErrNotFound, "a refused create creates nothing")
	}
}

func TestPartitionKeyDefinitionIsImmutable(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", 10, "/tenant")
	p, err := c.Read(ctx)
	require.NoError(t, err)

	for _, def := range []lethe.PartitionKeyDefinition{
		{},
		{Paths: []string{"/other"}},
		{Paths: []string{"/tenant", "/user"}},
		{Paths: []string{"/tenant"}, Version: 1},
	} {
		q := p
		q.PartitionKeyDefinition = def
		q.DefaultTimeToLive = 20
		err := c.Replace(ctx, q)
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%+v", def)
		assert.Contains(t, err.Error(), "cannot be changed")
		got, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, p, got, "a refused Replace changes nothing")
	}
	// The same definition, spelled with its defaults left out, is no change.
	q := p
	q.PartitionKeyDefinition = lethe.PartitionKeyDefinition{Paths: []string{"/tenant"}}
	q.DefaultTimeToLive = 20
	require.NoError(t, c.Replace(ctx, q))
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.TTL(20), got.DefaultTimeToLive)
	assert.Equal(t, p.PartitionKeyDefinition, got.PartitionKeyDefinition)

	// The caller's slice is copied both ways.
	got.PartitionKeyDefinition.Paths[0] = "/changed"
	again, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "/tenant", again.PartitionKeyDefinition.Paths[0])
}

// TestSameIDInTwoPartitions: an item is (partition key, id).
func TestSameIDInTwoPartitions(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, "/tenant")
	a, b := pkS("a"), pkS("b")
	_, err := c.CreateItem(ctx, a, []byte(`{"id":"x","tenant":"a","v":1}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, b, []byte(`{"id":"x","tenant":"b","v":2}`), nil)
	require.NoError(t, err, "the same id in another partition is another item")
	_, err = c.CreateItem(ctx, a, []byte(`{"id":"x","tenant":"a","v":3}`), nil)
	require.ErrorIs(t, err, lethe.ErrConflict)

	ra, err := c.ReadItem(ctx, a, "x", nil)
	require.NoError(t, err)
	assert.Contains(t, string(ra.Value), `"v":1`)
	rb, err := c.ReadItem(ctx, b, "x", nil)
	require.NoError(t, err)
	assert.Contains(t, string(rb.Value), `"v":2`)
	assert.False(t, readable(t, c, pkS("c"), "x"))
	assert.Equal(t, int64(2), c.Stats().Items)

	_, err = c.ReplaceItem(ctx, b, "x", []byte(`{"id":"x","tenant":"b","v":4}`), &lethe.ItemOptions{IfMatchEtag: ra.ETag})
	require.ErrorIs(t, err, lethe.ErrPreconditionFailed, "the ETag of a's x is not b's")
	_, err = c.DeleteItem(ctx, a, "x", nil)
	require.NoError(t, err)
	assert.False(t, readable(t, c, a, "x"))
	assert.True(t, readable(t, c, b, "x"), "deleting a's x leaves b's")
	up, err := c.UpsertItem(ctx, a, []byte(`{"id":"x","tenant":"a","v":5}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 201, up.StatusCode)
}

// TestPartitionKeyMismatch: a write whose document holds another value than
// the call's is 400 with Cosmos DB's message and changes nothing.
func TestPartitionKeyMismatch(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := partitioned(t, s, "c", 100, "/tenant")
	orig, err := c.CreateItem(ctx, pkS("a"), []byte(`{"id":"x","tenant":"a"}`), nil)
	require.NoError(t, err)
	clock.Advance(time.Second)

	const msg = "PartitionKey extracted from document doesn't match the one specified in the header"
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"create", func() error {
			_, err := c.CreateItem(ctx, pkS("a"), []byte(`{"id":"y","tenant":"b"}`), nil)
			return err
		}},
		{"create none", func() error { _, err := c.CreateItem(ctx, pkS("a"), []byte(`{"id":"y"}`), nil); return err }},
		{"create null", func() error {
			_, err := c.CreateItem(ctx, lethe.NullPartitionKey, []byte(`{"id":"y"}`), nil)
			return err
		}},
		{"create number", func() error {
			_, err := c.CreateItem(ctx, pkS("1"), []byte(`{"id":"y","tenant":1}`), nil)
			return err
		}},
		{"upsert", func() error {
			_, err := c.UpsertItem(ctx, pkS("a"), []byte(`{"id":"x","tenant":"b"}`), nil)
			return err
		}},
		{"upsert over another", func() error {
			_, err := c.UpsertItem(ctx, pkS("b"), []byte(`{"id":"x","tenant":"a"}`), nil)
			return err
		}},
		{"replace moves", func() error {
			_, err := c.ReplaceItem(ctx, pkS("a"), "x", []byte(`{"id":"x","tenant":"b"}`), nil)
			return err
		}},
		{"replace drops the key", func() error {
			_, err := c.ReplaceItem(ctx, pkS("a"), "x", []byte(`{"id":"x"}`), nil)
			return err
		}},
	} {
		err := tc.do()
		require.ErrorIs(t, err, lethe.ErrBadRequest, tc.name)
		assert.Contains(t, err.Error(), msg, tc.name)
		st := c.Stats()
		assert.Equal(t, int64(1), st.Items, tc.name)
		r, err := c.ReadItem(ctx, pkS("a"), "x", nil)
		require.NoError(t, err, tc.name)
		assert.Equal(t, orig.ETag, r.ETag, "%s: nothing changed", tc.name)
		assert.False(t, readable(t, c, pkS("b"), "x"), tc.name)
		assert.False(t, readable(t, c, pkS("a"), "y"), tc.name)
	}
}

// TestPartitionKeyValueKinds: string, number, bool, null and none values,
// as the document holds them, and how calls address them.
func TestPartitionKeyValueKinds(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, "/k")
	for _, tc := range []struct {
		doc   string
		pk    lethe.PartitionKey
		other []lethe.PartitionKey // keys that address another partition
	}{
		{`{"id":"s","k":"v"}`, pkS("v"), []lethe.PartitionKey{pkS("V"), pkS("v "), lethe.NullPartitionKey}},
		{`{"id":"e","k":"\u00e9\n"}`, pkS("é\n"), []lethe.PartitionKey{pkS(`\u00e9\n`)}},
		{`{"id":"n","k":5}`, lethe.NewPartitionKeyNumber(5), []lethe.PartitionKey{pkS("5"), lethe.NewPartitionKeyNumber(5.000001)}},
		{`{"id":"n2","k":5.0e0}`, lethe.NewPartitionKeyNumber(5), nil},
		{`{"id":"z","k":-0}`, lethe.NewPartitionKeyNumber(0), []lethe.PartitionKey{lethe.NewPartitionKeyBool(false)}},
		{`{"id":"big","k":1e300}`, lethe.NewPartitionKeyNumber(1e300), nil},
		{`{"id":"t","k":true}`, lethe.NewPartitionKeyBool(true), []lethe.PartitionKey{pkS("true"), lethe.NewPartitionKeyNumber(1)}},
		{`{"id":"f","k":false}`, lethe.NewPartitionKeyBool(false), nil},
		{`{"id":"null","k":null}`, lethe.NullPartitionKey, []lethe.PartitionKey{lethe.NonePartitionKey, pkS("null")}},
		{`{"id":"none"}`, lethe.NonePartitionKey, []lethe.PartitionKey{lethe.NullPartitionKey}},
		{`{"id":"nested","k2":{"k":1}}`, lethe.NonePartitionKey, nil},
		{`{"id":"o","k":{"a":1}}`, lethe.NonePartitionKey, []lethe.PartitionKey{lethe.NullPartitionKey}},
		{`{"id":"empty","k":{}}`, lethe.NonePartitionKey, nil},
		{`{"id":"a","k":[1]}`, lethe.NonePartitionKey, []lethe.PartitionKey{lethe.NullPartitionKey, lethe.NewPartitionKeyNumber(1)}},
	} {
		_, err := c.CreateItem(ctx, tc.pk, []byte(tc.doc), nil)
		require.NoError(t, err, tc.doc)
		var id string
		require.NoError(t, jsonField(tc.doc, "id", &id))
		assert.True(t, readable(t, c, tc.pk, id), tc.doc)
		for _, o := range tc.other {
			assert.False(t, readable(t, c, o, id), "%s read as %v", tc.doc, o)
		}
	}
}

// TestPartitionKeyObjectOrArrayIsNone: an object or an array at a partition
// key path is undefined, as Cosmos DB takes it: the document is stored,
// read, queried, replaced and deleted under none ([{}]), and any other key
// is refused with the mismatch message, changing nothing.
func TestPartitionKeyObjectOrArrayIsNone(t *testing.T) {
	t.Parallel()
	const msg = "PartitionKey extracted from document doesn't match the one specified in the header"
	none := lethe.NonePartitionKey
	for _, tc := range []struct {
		name  string
		paths []string
		doc   string
		pk    lethe.PartitionKey // the document's key
		other lethe.PartitionKey // a key it is not under
	}{
		{"object", []string{"/k"}, `{"id":"x","k":{"a":1}}`, none, lethe.NullPartitionKey},
		{"empty object", []string{"/k"}, `{"id":"x","k":{}}`, none, lethe.NullPartitionKey},
		{"array", []string{"/k"}, `{"id":"x","k":["a"]}`, none, pkS("a")},
		{"empty array", []string{"/k"}, `{"id":"x","k":[]}`, none, lethe.NullPartitionKey},
		{"array of objects", []string{"/k"}, `{"id":"x","k":[{"a":1}]}`, none, lethe.NullPartitionKey},
		{"nested path", []string{"/address"}, `{"id":"x","address":{"street":"1 Way","state":"WA"}}`, none, pkS("WA")},
		{"deep", []string{"/a/b"}, `{"id":"x","a":{"b":{"c":null}}}`, none, lethe.NullPartitionKey},
		{"hierarchical", []string{"/t", "/u"}, `{"id":"x","t":"a","u":{"v":1}}`,
			pkS("a").AppendNone(), pkS("a").AppendNull()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			c := partitioned(t, s, "c", lethe.TTLOff, tc.paths...)
			_, err := c.CreateItem(ctx, tc.other, []byte(tc.doc), nil)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), msg)
			assert.Equal(t, int64(0), c.Stats().Items, "nothing changed")

			_, err = c.CreateItem(ctx, tc.pk, []byte(tc.doc), nil)
			require.NoError(t, err)
			assert.True(t, readable(t, c, tc.pk, "x"))
			assert.False(t, readable(t, c, tc.other, "x"))
			var ids []string
			for v, err := range c.QueryItems(ctx, "SELECT VALUE c.id FROM c", tc.pk, nil) {
				require.NoError(t, err)
				ids = append(ids, string(v))
			}
			assert.Equal(t, []string{`"x"`}, ids)
			_, err = c.UpsertItem(ctx, tc.pk, []byte(tc.doc), nil)
			require.NoError(t, err)
			_, err = c.ReplaceItem(ctx, tc.other, "x", []byte(tc.doc), nil)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), msg)
			var ops lethe.PatchOperations
			ops.AppendSet("/n", 1)
			_, err = c.PatchItem(ctx, tc.pk, "x", ops, nil)
			require.NoError(t, err, "a patch that leaves the key alone")
			var move lethe.PatchOperations
			move.AppendSet(tc.paths[len(tc.paths)-1], "s")
			_, err = c.PatchItem(ctx, tc.pk, "x", move, nil)
			require.ErrorIs(t, err, lethe.ErrBadRequest, "a patch that changes the key")

			_, err = c.DeleteItem(ctx, tc.pk, "x", nil)
			require.NoError(t, err)
			assert.False(t, readable(t, c, tc.pk, "x"))

			b := c.NewTransactionalBatch(tc.pk)
			b.CreateItem([]byte(tc.doc), nil)
			resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err)
			assert.True(t, resp.Success, "a batch under the none key")
			assert.True(t, readable(t, c, tc.pk, "x"))
		})
	}
}

// TestPartitionKeyNestedPaths: a path reaches into objects; a path that
// leads nowhere (a missing member, a scalar on the way) is none.
func TestPartitionKeyNestedPaths(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, `/a/"b/c"/d`)
	for _, tc := range []struct {
		doc string
		pk  lethe.PartitionKey
	}{
		{`{"id":"1","a":{"x":[{"d":1}],"b/c":{"z":null,"d":"deep"}}}`, pkS("deep")},
		{`{"id":"2","a":{"b\/c":{"\u0064":"esc"}}}`, pkS("esc")},
		{`{"id":"3","a":{"b/c":"scalar"}}`, lethe.NonePartitionKey},
		{`{"id":"4","a":{"b/c":{}}}`, lethe.NonePartitionKey},
		{`{"id":"5","a":[{"b/c":{"d":1}}]}`, lethe.NonePartitionKey},
		{`{"id":"6","a":{"b/c":{"d":null}}}`, lethe.NullPartitionKey},
	} {
		_, err := c.CreateItem(ctx, tc.pk, []byte(tc.doc), nil)
		require.NoError(t, err, tc.doc)
	}
	_, err := c.CreateItem(ctx, pkS("deep"), []byte(`{"id":"7","a":{"b/c":{"d":"other"}}}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)

	// Segments in single quotes, as the SDKs' specs write them: a name up
	// to the next single quote, double quotes and slashes in it as they are.
	q := partitioned(t, s, "q", lethe.TTLOff, `/'level" 1*()'/'le/vel2'`)
	_, err = q.CreateItem(ctx, pkS("v"), []byte(`{"id":"1","level\" 1*()":{"le/vel2":"v"}}`), nil)
	require.NoError(t, err)
	_, err = q.CreateItem(ctx, pkS("w"), []byte(`{"id":"2","level\" 1*()":{"le/vel2":"v"}}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
}

// TestHierarchicalPartitionKeys: two and three levels; point operations need
// every level, queries take a prefix.
func TestHierarchicalPartitionKeys(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, "/tenant", "/user", "/session")
	key := func(tenant, user, session string) lethe.PartitionKey {
		return pkS(tenant).AppendString(user).AppendString(session)
	}
	for _, d := range [][3]string{{"t1", "u1", "s1"}, {"t1", "u1", "s2"}, {"t1", "u2", "s1"}, {"t2", "u1", "s1"}} {
		doc := fmt.Sprintf(`{"id":"x","tenant":%q,"user":%q,"session":%q}`, d[0], d[1], d[2])
		_, err := c.CreateItem(ctx, key(d[0], d[1], d[2]), []byte(doc), nil)
		require.NoError(t, err, doc)
	}
	assert.True(t, readable(t, c, key("t1", "u2", "s1"), "x"))
	assert.False(t, readable(t, c, key("t1", "u2", "s2"), "x"))

	// A missing level is none, a null level null.
	_, err := c.CreateItem(ctx, pkS("t3").AppendNone().AppendNull(), []byte(`{"id":"y","tenant":"t3","session":null}`), nil)
	require.NoError(t, err)
	assert.True(t, readable(t, c, pkS("t3").AppendNone().AppendNull(), "y"))
	assert.False(t, readable(t, c, pkS("t3").AppendNull().AppendNull(), "y"))

	for _, bad := range []lethe.PartitionKey{pkS("t1"), pkS("t1").AppendString("u1"), lethe.NewPartitionKey()} {
		_, err := c.ReadItem(ctx, bad, "x", nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%v", bad)
		_, err = c.DeleteItem(ctx, bad, "x", nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%v", bad)
	}
	assert.Equal(t, int64(5), c.Stats().Items, "refused deletes delete nothing")

	count := func(pk lethe.PartitionKey) int {
		var n int
		for item, err := range c.QueryItems(ctx, "SELECT VALUE COUNT(1) FROM c", pk, nil) {
			require.NoError(t, err)
			_, err := fmt.Sscan(string(item), &n)
			require.NoError(t, err)
		}
		return n
	}
	assert.Equal(t, 5, count(lethe.NewPartitionKey()))
	assert.Equal(t, 3, count(pkS("t1")))
	assert.Equal(t, 2, count(pkS("t1").AppendString("u1")))
	assert.Equal(t, 1, count(key("t1", "u1", "s2")))
	assert.Equal(t, 0, count(pkS("t9")))
	assert.Equal(t, 1, count(pkS("t3").AppendNone()))

	// Two levels.
	c2 := partitioned(t, s, "c2", lethe.TTLOff, "/a", "/b")
	_, err = c2.CreateItem(ctx, lethe.NewPartitionKeyNumber(1).AppendBool(true), []byte(`{"id":"x","a":1,"b":true}`), nil)
	require.NoError(t, err)
	assert.True(t, readable(t, c2, lethe.NewPartitionKeyNumber(1).AppendBool(true), "x"))
	_, err = c2.ReadItem(ctx, key("1", "2", "3"), "x", nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest, "three components for two paths")
	assert.Contains(t, err.Error(), "more than the 2 path(s)")
}

// TestPartitionKeyOnUnpartitionedContainer: the empty key, and only it.
func TestPartitionKeyOnUnpartitionedContainer(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	flat, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "flat"})
	require.NoError(t, err)
	_, err = flat.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","k":"v"}`), nil)
	require.NoError(t, err)
	for _, pk := range []lethe.PartitionKey{pkS("a"), lethe.NullPartitionKey, lethe.NonePartitionKey} {
		_, err = flat.CreateItem(ctx, pk, []byte(`{"id":"b"}`), nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		assert.Contains(t, err.Error(), "not partitioned")
		_, err = flat.ReadItem(ctx, pk, "a", nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		for _, err := range flat.QueryItems(ctx, "SELECT * FROM c", pk, nil) {
			require.ErrorIs(t, err, lethe.ErrBadRequest)
		}
	}
	assert.Equal(t, int64(1), flat.Stats().Items)

	part := partitioned(t, s, "part", lethe.TTLOff, "/k")
	_, err = part.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b","k":"v"}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Contains(t, err.Error(), "needs a partition key value")
	_, err = part.ReadItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Equal(t, int64(0), part.Stats().Items)
}

// TestInvalidPartitionKeyValues: a key that cannot be valid fails every
// call that uses it, naming why.
func TestInvalidPartitionKeyValues(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, "/a", "/b", "/c")
	for _, tc := range []struct {
		pk   lethe.PartitionKey
		want string
	}{
		{lethe.NewPartitionKeyNumber(math.NaN()).AppendNull().AppendNull(), "not finite"},
		{lethe.NewPartitionKeyNumber(math.Inf(1)).AppendNull().AppendNull(), "not finite"},
		{pkS("a").AppendString("b").AppendString("c").AppendString("d"), "more than 3 components"},
		{pkS("\xff").AppendNull().AppendNull(), "UTF-8"},
		{pkS(strings.Repeat("x", lethe.MaxPartitionKeyLength+1)).AppendNull().AppendNull(), "over 2048 bytes"},
	} {
		_, err := c.CreateItem(ctx, tc.pk, []byte(`{"id":"x","a":"a","b":"b","c":"c"}`), nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		assert.Contains(t, err.Error(), tc.want)
		_, err = c.ReadItem(ctx, tc.pk, "x", nil)
		require.ErrorIs(t, err, lethe.ErrBadRequest)
	}
	_, err := c.CreateItem(ctx, pkS(strings.Repeat("x", 2100)).AppendNull().AppendNull(),
		[]byte(`{"id":"x","a":"`+strings.Repeat("x", 2100)+`","b":null,"c":null}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Equal(t, int64(0), c.Stats().Items)
}

func TestPartitionKeyString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pk   lethe.PartitionKey
		want string
	}{
		{lethe.NewPartitionKey(), `[]`},
		{pkS("a\"b"), `["a\"b"]`},
		{lethe.NewPartitionKeyNumber(1.5), `[1.5]`},
		{lethe.NewPartitionKeyNumber(math.Copysign(0, -1)), `[0]`},
		{lethe.NewPartitionKeyBool(true).AppendBool(false), `[true,false]`},
		{lethe.NullPartitionKey, `[null]`},
		{lethe.NonePartitionKey, `[{}]`},
		{pkS("t").AppendNumber(-2).AppendNone(), `["t",-2,{}]`},
		// JSON, not Go, quoting: the header must parse as JSON.
		{pkS("\x01\x7f\u2028é"), "[\"\\u0001\x7f\u2028é\"]"},
		{pkS("tab\there"), `["tab\there"]`},
		{lethe.NewPartitionKeyNumber(1e6), `[1000000]`},
		{lethe.NewPartitionKeyNumber(1e21), `[1e+21]`},
		{lethe.NewPartitionKeyNumber(1e-7), `[1e-7]`},
	} {
		assert.Equal(t, tc.want, tc.pk.String())
	}
	assert.Equal(t, lethe.NewPartitionKeyNumber(0), lethe.NewPartitionKeyNumber(math.Copysign(0, -1)), "-0 is 0")
	assert.Equal(t, pkS("a").AppendString("b"), pkS("a").AppendString("b"), "keys are comparable values")
	assert.NotEqual(t, pkS("ab"), pkS("a").AppendString("b"))
	assert.Equal(t, lethe.PartitionKey{}, lethe.NewPartitionKey(), "the zero value is the empty key")
}

// TestQueryScopedToPartition: a query with a key sees its partition only;
// with the empty key, all of them.
func TestQueryScopedToPartition(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLOff, "/tenant")
	for i, tenant := range []string{"a", "a", "b", "c", "c", "c"} {
		_, err := c.CreateItem(ctx, pkS(tenant), fmt.Appendf(nil, `{"id":"%d","tenant":%q,"n":%d}`, i%3, tenant, i), nil)
		require.NoError(t, err)
	}
	ids := func(pk lethe.PartitionKey) []string {
		var out []string
		for item, err := range c.QueryItems(ctx, "SELECT VALUE c.tenant || ':' || c.id FROM c", pk, nil) {
			require.NoError(t, err)
			out = append(out, strings.Trim(string(item), `"`))
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"a:0", "a:1"}, ids(pkS("a")))
	assert.Equal(t, []string{"c:0", "c:1", "c:2"}, ids(pkS("c")))
	assert.Empty(t, ids(pkS("z")))
	assert.Equal(t, []string{"a:0", "a:1", "b:2", "c:0", "c:1", "c:2"}, ids(lethe.NewPartitionKey()))
}

// TestExpiryWithinPartitions: TTL rules hold per item in every partition.
func TestExpiryWithinPartitions(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := partitioned(t, s, "c", 10, "/tenant")
	a, b := pkS("a"), pkS("b")
	_, err := c.CreateItem(ctx, a, []byte(`{"id":"x","tenant":"a","ttl":5}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, b, []byte(`{"id":"x","tenant":"b"}`), nil)
	require.NoError(t, err)
	clock.Advance(5 * time.Second)
	assert.False(t, readable(t, c, a, "x"), "a's x expired at 5 s")
	assert.True(t, readable(t, c, b, "x"), "b's x lives to 10 s")
	_, err = c.ReplaceItem(ctx, a, "x", []byte(`{"id":"x","tenant":"a"}`), nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	_, err = c.CreateItem(ctx, a, []byte(`{"id":"x","tenant":"a"}`), nil)
	require.NoError(t, err, "a create over an expired item")
	st := c.Stats()
	assert.Equal(t, int64(2), st.Items)
	clock.Advance(5 * time.Second)
	assert.False(t, readable(t, c, b, "x"))
	assert.True(t, readable(t, c, a, "x"))
	for item, err := range c.QueryItems(ctx, "SELECT VALUE c.tenant FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		assert.Equal(t, `"a"`, string(item), "expired items are invisible to queries in every partition")
	}
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "b/x; the create over a/x replaced the expired version")
	assert.True(t, readable(t, c, a, "x"))
}

// jsonField decodes the member name of the JSON object doc into v.
func jsonField(doc, name string, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		return err
	}
	return json.Unmarshal(m[name], v)
}
