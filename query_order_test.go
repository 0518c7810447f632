package lethe_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queryIDs runs text over every partition of c, pages of size items (0:
// the default), and returns the ids of its results, whether it runs on
// indexes or scans.
func queryIDs(t testing.TB, c *lethe.Container, text string, size int32) []string {
	t.Helper()
	var ids []string
	opts := &lethe.QueryOptions{PageSizeHint: size}
	for item, err := range c.QueryItems(ctx, text, lethe.NewPartitionKey(), opts) {
		require.NoError(t, err)
		var v struct{ ID string }
		require.NoError(t, json.Unmarshal(item, &v))
		ids = append(ids, v.ID)
	}
	return ids
}

// queryIDsBoth is queryIDs with indexes and with scans, which must agree.
func queryIDsBoth(t testing.TB, c *lethe.Container, text string, size int32) []string {
	t.Helper()
	indexed := queryIDs(t, c, text, size)
	queryIDs(t, c, text, size) // a filter's index is made the second time
	indexed2 := queryIDs(t, c, text, size)
	was := lethe.SetUseIndexes(c, false)
	defer lethe.SetUseIndexes(c, was)
	scanned := queryIDs(t, c, text, size)
	require.Equal(t, scanned, indexed, "%s: before its indexes", text)
	require.Equal(t, scanned, indexed2, "%s: with its indexes", text)
	return scanned
}

// TestQueryCreationOrder: results without ORDER BY come in the order the
// items were created, across partition key values, as Cosmos DB returns
// them in the order of their _rid: a replace, an upsert or a patch of a
// live item keeps its place; a delete and a create again, or a create of
// an expired item, put it at the end; a transactional batch creates in the
// order of its operations. Ties of ORDER BY values, the candidates of an
// index evaluated in item order for TOP, and every page size follow the
// same order.
func TestQueryCreationOrder(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := partitioned(t, s, "c", lethe.TTLNever, "/pk")
	write := func(f func(lethe.PartitionKey, []byte, *lethe.ItemOptions) (lethe.ItemResponse, error), pk, id, rest string) {
		t.Helper()
		_, err := f(pkS(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"k":1%s}`, id, pk, rest), nil)
		require.NoError(t, err)
	}
	createItem := func(pk lethe.PartitionKey, doc []byte, o *lethe.ItemOptions) (lethe.ItemResponse, error) {
		return c.CreateItem(ctx, pk, doc, o)
	}
	upsertItem := func(pk lethe.PartitionKey, doc []byte, o *lethe.ItemOptions) (lethe.ItemResponse, error) {
		return c.UpsertItem(ctx, pk, doc, o)
	}
	for i := range 4 { // alternating partitions, ids out of their order
		write(createItem, "a", fmt.Sprint("z", i), "")
		write(createItem, "b", fmt.Sprint("y", i), "")
	}
	want := []string{"z0", "y0", "z1", "y1", "z2", "y2", "z3", "y3"}
	assert.Equal(t, want, queryIDsBoth(t, c, "SELECT * FROM c", 0))

	_, err := c.ReplaceItem(ctx, pkS("a"), "z0", []byte(`{"id":"z0","pk":"a","k":1,"v":2}`), nil)
	require.NoError(t, err)
	write(upsertItem, "b", "y0", `,"v":3`)
	var ops lethe.PatchOperations
	ops.AppendSet("/v", 4)
	_, err = c.PatchItem(ctx, pkS("a"), "z1", ops, nil)
	require.NoError(t, err)
	assert.Equal(t, want, queryIDsBoth(t, c, "SELECT * FROM c", 0), "writes of live items keep their places")

	_, err = c.DeleteItem(ctx, pkS("b"), "y1", nil)
	require.NoError(t, err)
	write(createItem, "b", "y1", "")
	write(upsertItem, "a", "new", "")
	_, err = c.DeleteItem(ctx, pkS("a"), "z2", nil)
	require.NoError(t, err)
	write(upsertItem, "a", "z2", "")
	write(upsertItem, "b", "y2", `,"ttl":5`) // keeps its place, then expires
	clock.Advance(6 * time.Second)
	write(createItem, "b", "y2", "")
	b := c.NewTransactionalBatch(pkS("a"))
	b.CreateItem([]byte(`{"id":"b2","pk":"a","k":1}`), nil)
	b.CreateItem([]byte(`{"id":"b1","pk":"a","k":1}`), nil)
	b.ReplaceItem("z3", []byte(`{"id":"z3","pk":"a","k":1,"v":5}`), nil)
	resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	want = []string{"z0", "y0", "z1", "z3", "y3", "y1", "new", "z2", "y2", "b2", "b1"}
	for _, size := range []int32{0, 1, 2, 3, 11} {
		assert.Equal(t, want, queryIDsBoth(t, c, "SELECT * FROM c", size), "pages of %d", size)
		assert.Equal(t, want, queryIDsBoth(t, c, "SELECT * FROM c WHERE c.k = 1", size), "pages of %d", size)
		assert.Equal(t, want, queryIDsBoth(t, c, "SELECT * FROM c ORDER BY c.k", size), "ties, pages of %d", size)
		assert.Equal(t, want[:4], queryIDsBoth(t, c, "SELECT TOP 4 * FROM c WHERE c.k = 1", size), "pages of %d", size)
		assert.Equal(t, want[2:6], queryIDsBoth(t, c, "SELECT * FROM c WHERE c.k = 1 OFFSET 2 LIMIT 4", size), "pages of %d", size)
	}
	assert.Equal(t, []string{"z0", "y0", "z1", "z3"}, queryIDsBoth(t, c, "SELECT * FROM c WHERE IS_DEFINED(c.v) ORDER BY c.k", 0))
	assert.Equal(t, []string{"y0", "y3", "y1", "y2"}, queryIDsBoth(t, c, "SELECT * FROM c WHERE c.pk = 'b'", 2))
}

// TestQueryTokenResumesByPosition: a continuation token resumes after the
// position of its page's last item: an item created after it is returned,
// an item deleted and created again comes again at the end, and a page's
// item deleted after it is not returned again.
func TestQueryTokenResumesByPosition(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	for _, id := range []string{"d", "c", "b", "a"} {
		create(t, c, fmt.Sprintf(`{"id":%q}`, id))
	}
	p := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 2})
	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte(`"d"`), []byte(`"c"`)}, page.Items)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "d", nil)
	require.NoError(t, err)
	create(t, c, `{"id":"d"}`)
	create(t, c, `{"id":"0"}`)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.NoError(t, err)
	var rest []string
	for item, err := range c.QueryItems(ctx, "SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 2, ContinuationToken: page.ContinuationToken}) {
		require.NoError(t, err)
		rest = append(rest, string(item))
	}
	assert.Equal(t, []string{`"a"`, `"d"`, `"0"`}, rest)

	// A pager's later pages, served from its evaluation, leave out an
	// item deleted since, even when an item of its id has been created
	// again: that is another item.
	p = c.NewQueryItemsPager("SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 2})
	page, err = p.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte(`"c"`), []byte(`"a"`)}, page.Items)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "d", nil)
	require.NoError(t, err)
	create(t, c, `{"id":"d"}`)
	page, err = p.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte(`"0"`)}, page.Items)
}

// TestQueryTokenRefused: a token that this container's query did not
// return is a 400 naming what is wrong, never a panic or another
// container's results: forged bytes, a token of the format before
// positions, another container's, and one of a container deleted and
// created again under the same id.
func TestQueryTokenRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	other := mustContainer(t, s, lethe.ContainerProperties{ID: "other"})
	for i := range 3 {
		create(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
		create(t, other, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	const text = "SELECT * FROM c"
	token := func(c *lethe.Container) string {
		page, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1}).NextPage(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, page.ContinuationToken)
		return page.ContinuationToken
	}
	good, _ := base64.RawURLEncoding.DecodeString(token(c))
	v1 := append([]byte{1}, good[1:]...)
	recreated := token(c)
	require.NoError(t, s.DeleteContainer(ctx, "c"))
	c = mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	create(t, c, `{"id":"x"}`)
	for name, tc := range map[string]struct{ token, want string }{
		"not base64":       {"!!", "malformed"},
		"version 0":        {"AA", "version 0"},
		"cut short":        {base64.RawURLEncoding.EncodeToString(good[:len(good)-3]), "malformed"},
		"trailing bytes":   {base64.RawURLEncoding.EncodeToString(append(good, 0)), "malformed"},
		"version 1":        {base64.RawURLEncoding.EncodeToString(v1), "version 1"},
		"version 2":        {base64.RawURLEncoding.EncodeToString(append([]byte{2}, good[1:]...)), "version 2"},
		"other container":  {token(other), `another container ("other")`},
		"container again":  {recreated, "has been deleted"},
		"huge length":      {base64.RawURLEncoding.EncodeToString([]byte{3, 0xff, 0xff, 0xff, 0xff, 0x0f}), "malformed"},
		"no creation":      {base64.RawURLEncoding.EncodeToString([]byte{3, 1, 'c'}), "malformed"},
		"creation overrun": {base64.RawURLEncoding.EncodeToString([]byte{3, 1, 'c', 0x80}), "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{ContinuationToken: tc.token}).NextPage(ctx)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDurablePositions: a durable store keeps its items' positions, and
// goes on after the last position it handed out, even when the items that
// had it were deleted and the log that created them was trimmed by a
// snapshot: a token of a page that ended there then resumes with the items
// created after it.
func TestDurablePositions(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprint("checkpoint=", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
			for _, id := range []string{"e", "d", "c", "b", "a"} {
				create(t, c, fmt.Sprintf(`{"id":%q}`, id))
			}
			upsert(t, c, `{"id":"e","v":1}`)
			page, err := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 4}).NextPage(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, page.ContinuationToken)
			for _, id := range []string{"b", "a"} {
				_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
				require.NoError(t, err)
			}
			s, c = reopenC(t, s, dir, clock, checkpoint)
			defer s.Close()
			assert.Equal(t, []string{"e", "d", "c"}, queryIDs(t, c, "SELECT * FROM c", 0))
			create(t, c, `{"id":"0"}`)
			assert.Equal(t, []string{"e", "d", "c", "0"}, queryIDs(t, c, "SELECT * FROM c", 0))
			var rest []string
			for item, err := range c.QueryItems(ctx, "SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 4, ContinuationToken: page.ContinuationToken}) {
				require.NoError(t, err)
				rest = append(rest, string(item))
			}
			assert.Equal(t, []string{`"0"`}, rest)
		})
	}
}

// TestRecoverFormat2Positions opens a store of format 2, whose records had
// no position: its items get positions in the order of their partition key
// values and ids (the order results came in before), whatever order they
// were created in; items created since come after them; and every later
// recovery, of the old files with the new log after them or of a
// snapshot, gives the same positions.
func TestRecoverFormat2Positions(t *testing.T) {
	t.Parallel()
	written := t0.Add(-time.Minute).UnixNano()
	seq := uint64(1)
	v2record := func(pk, id, body string) []byte {
		var h [20]byte
		seq++
		binary.LittleEndian.PutUint64(h[0:], uint64(written))
		binary.LittleEndian.PutUint32(h[12:], uint32(len(body)))
		binary.LittleEndian.PutUint16(h[16:], uint16(len(pk)))
		binary.LittleEndian.PutUint16(h[18:], uint16(len(id)))
		return fmt.Appendf(h[:], "%s%s%016x%s", pk, id, seq, body)
	}
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	var data []byte
	frame := func(p []byte) { data = append(binary.AppendUvarint(data, uint64(len(p))), p...) }
	frame(str(binary.AppendVarint(binary.AppendUvarint([]byte{'C'}, 1), written), `{"ID":"c"}`))
	for _, id := range []string{"b", "d", "a", "c"} {
		frame(append(str([]byte{'P'}, "c"), v2record("", id, fmt.Sprintf(`{"id":%q}`, id))...))
	}
	file := fuzzFile("LETHEWAL", fuzzFramed, data)
	file[len("LETHEWAL")] = 2
	dir := t.TempDir()
	writeFuzzFile(t, dir, "wal-0000000000000001.log", file)

	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c, err := s.Container("c")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, queryIDs(t, c, "SELECT * FROM c", 0))
	create(t, c, `{"id":"0"}`)
	upsert(t, c, `{"id":"b","v":1}`)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "c", nil)
	require.NoError(t, err)
	create(t, c, `{"id":"c"}`)
	want := []string{"a", "b", "d", "0", "c"}
	assert.Equal(t, want, queryIDs(t, c, "SELECT * FROM c", 0))
	s, c = reopenC(t, s, dir, clock, false) // the old log, then the new
	assert.Equal(t, want, queryIDs(t, c, "SELECT * FROM c", 0), "after the old log")
	s, c = reopenC(t, s, dir, clock, true)
	defer s.Close()
	assert.Equal(t, want, queryIDs(t, c, "SELECT * FROM c", 0), "from the snapshot")
	create(t, c, `{"id":"1"}`)
	assert.Equal(t, append(want, "1"), queryIDs(t, c, "SELECT * FROM c", 0))
}

// FuzzQueryToken: a continuation token is untrusted input. Whatever its
// bytes, resuming a query with it gives a 400 or results of the container
// the query runs in, never a panic or another container's items. The seeds
// are the tokens of those queries in this container and in another, some
// of them inside an item's JOIN rows (whose position a token carries: a
// forged one may only move where the item's rows resume).
func FuzzQueryToken(f *testing.F) {
	s, _ := newStore(f)
	texts := []string{
		"SELECT * FROM c",
		"SELECT * FROM c WHERE c.n >= 1",
		"SELECT * FROM c ORDER BY c.n DESC",
		"SELECT DISTINCT VALUE c.n FROM c",
		"SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n",
		"SELECT TOP 5 c.id FROM c JOIN t IN c.tags",
		"SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags WHERE c.n > 0 OFFSET 3 LIMIT 20",
		"SELECT VALUE [c.id, t, u] FROM c JOIN t IN c.tags JOIN u IN c.tags",
	}
	var cs []*lethe.Container
	for _, id := range []string{"mine", "other"} {
		c := mustContainer(f, s, lethe.ContainerProperties{ID: id})
		for i := range 8 {
			create(f, c, fmt.Sprintf(`{"id":"%s-%d","n":%d,"tags":[1,2]}`, id, i, i%3))
		}
		for _, text := range texts {
			for _, size := range []int32{2, 3} {
				page, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: size}).NextPage(ctx)
				require.NoError(f, err)
				b, err := base64.RawURLEncoding.DecodeString(page.ContinuationToken)
				require.NoError(f, err)
				f.Add(b)
			}
		}
		cs = append(cs, c)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		token := base64.RawURLEncoding.EncodeToString(b)
		for _, text := range texts {
			p := cs[0].NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 3, ContinuationToken: token})
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					require.ErrorIs(t, err, lethe.ErrBadRequest)
					break
				}
				for _, item := range page.Items {
					require.NotContains(t, string(item), "other-", text)
				}
			}
		}
	})
}

// reopenC checkpoints the durable store s in dir when asked, closes it,
// opens it again and returns it with its container "c".
func reopenC(t testing.TB, s *lethe.Store, dir string, clock *lethe.ManualClock, checkpoint bool) (*lethe.Store, *lethe.Container) {
	t.Helper()
	if checkpoint {
		require.NoError(t, s.Checkpoint(ctx))
	}
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	c, err := s.Container("c")
	require.NoError(t, err)
	return s, c
}
