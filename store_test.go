package lethe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenDefaults(t *testing.T) {
	t.Parallel()
	s, err := lethe.Open(nil)
	require.NoError(t, err)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, err)
	before := time.Now().Unix()
	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), nil)
	require.NoError(t, err)
	var doc struct {
		Ts int64 `json:"_ts"`
	}
	require.NoError(t, json.Unmarshal(r.Value, &doc))
	assert.InDelta(t, before, doc.Ts, 1, "_ts comes from the system clock")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
}

func TestOpenRefusesInvalidOptions(t *testing.T) {
	t.Parallel()
	var nilClock *lethe.ManualClock
	for _, tc := range []struct {
		opts   lethe.Options
		option string
	}{
		{lethe.Options{Reaper: lethe.ReaperOptions{BatchSize: -1}}, "Reaper.BatchSize"},
		{lethe.Options{Reaper: lethe.ReaperOptions{BatchSize: math.MaxInt}}, "Reaper.BatchSize"},
		{lethe.Options{Reaper: lethe.ReaperOptions{BatchSize: lethe.MaxReaperBatchSize + 1}}, "Reaper.BatchSize"},
		{lethe.Options{Reaper: lethe.ReaperOptions{MaxHold: -1}}, "Reaper.MaxHold"},
		{lethe.Options{Reaper: lethe.ReaperOptions{MaxHold: math.MaxInt64}}, "Reaper.MaxHold"},
		{lethe.Options{Clock: nilClock}, "Clock"},
		{lethe.Options{Throughput: -1}, "Throughput"},
		{lethe.Options{AutoscaleMaxThroughput: -1000}, "AutoscaleMaxThroughput"},
		{lethe.Options{Throughput: 400, AutoscaleMaxThroughput: 1000}, "AutoscaleMaxThroughput"},
	} {
		t.Run(fmt.Sprint(tc.option, tc.opts.Throughput, tc.opts.AutoscaleMaxThroughput), func(t *testing.T) {
			s, err := lethe.Open(&tc.opts)
			require.Error(t, err)
			assert.Nil(t, s)
			var oe *lethe.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.option, oe.Option)
			assert.NotErrorIs(t, err, lethe.ErrBadRequest, "a bad option is not a request")
			assert.Contains(t, err.Error(), tc.option)
		})
	}
	// The limits themselves are accepted.
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{BatchSize: lethe.MaxReaperBatchSize, MaxHold: lethe.MaxReaperMaxHold}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestItemCRUD(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, lethe.TTLOff)

	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","n":1}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 201, r.StatusCode)
	assert.NotEmpty(t, r.ETag)
	assert.JSONEq(t, fmt.Sprintf(`{"id":"a","n":1,"_ts":%d,"_etag":%q}`, t0.Unix(), r.ETag), string(r.Value))

	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","n":2}`), nil)
	require.ErrorIs(t, err, lethe.ErrConflict)
	assert.Equal(t, 409, status(err))
	assert.Contains(t, err.Error(), "Entity with the specified id already exists in the system.")

	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, 200, got.StatusCode)
	assert.Equal(t, r.Value, got.Value)
	assert.Equal(t, r.ETag, got.ETag)

	clock.Advance(3 * time.Second)
	rep, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","n":2}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 200, rep.StatusCode)
	assert.NotEqual(t, r.ETag, rep.ETag, "every write changes the _etag")
	assert.Contains(t, string(rep.Value), fmt.Sprintf(`"_ts":%d`, t0.Unix()+3))

	up, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","n":3}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 200, up.StatusCode)
	up, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b","n":1}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 201, up.StatusCode)

	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "missing", []byte(`{"id":"missing"}`), nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"b"}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest, "a replace whose document names another id")

	del, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, 204, del.StatusCode)
	assert.Nil(t, del.Value)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	assert.Contains(t, err.Error(), "Entity with the specified id does not exist in the system.")
	assert.Equal(t, int64(1), c.Stats().Items)
}

// TestSystemProperties: client values of _ts and _etag are ignored.
func TestSystemProperties(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	r := create(t, c, `{"_ts": 12, "id":"a", "_etag": "mine", "x": {"_ts": 1}}`)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(r.Value, &doc))
	assert.Equal(t, float64(t0.Unix()), doc["_ts"])
	assert.Equal(t, r.ETag, doc["_etag"])
	assert.Equal(t, map[string]any{"_ts": float64(1)}, doc["x"], "only top-level system properties belong to the store")
	assert.Equal(t, 1, strings.Count(string(r.Value), `"_etag"`))
	r = create(t, c, `{"id":"b","_ts":1,"_etag":"x"}`)
	assert.JSONEq(t, fmt.Sprintf(`{"id":"b","_ts":%d,"_etag":%q}`, t0.Unix(), r.ETag), string(r.Value))
}

func TestIfMatch(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	r := create(t, c, `{"id":"a"}`)
	stale := &lethe.ItemOptions{IfMatchEtag: `"stale"`}
	current := &lethe.ItemOptions{IfMatchEtag: r.ETag}

	_, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","v":1}`), stale)
	require.ErrorIs(t, err, lethe.ErrPreconditionFailed)
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","v":1}`), stale)
	require.ErrorIs(t, err, lethe.ErrPreconditionFailed)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", stale)
	require.ErrorIs(t, err, lethe.ErrPreconditionFailed)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", stale)
	require.NoError(t, err, "reads ignore If-Match")
	assert.Equal(t, r.ETag, got.ETag, "failed writes changed the item")

	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"new"}`), stale)
	require.NoError(t, err, "a create ignores If-Match")
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"new2"}`), stale)
	require.NoError(t, err, "an upsert that creates ignores If-Match")

	r2, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","v":2}`), current)
	require.NoError(t, err)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", current)
	require.ErrorIs(t, err, lethe.ErrPreconditionFailed, "the old etag is stale after a write")
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", &lethe.ItemOptions{IfMatchEtag: r2.ETag})
	require.NoError(t, err)
}

// TestCopies: the store never shares memory with its callers.
func TestCopies(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	in := []byte(`{"id":"a","v":"xxxx"}`)
	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), in, nil)
	require.NoError(t, err)
	want := string(r.Value)
	copy(in[13:], "yyyy")
	for i := range r.Value {
		r.Value[i] = 'z'
	}
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, want, string(got.Value))
	got.Value[0] = 'q'
	again, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, want, string(again.Value))
}

// TestBadItems: every kind of bad document is a 400 (413 for size) naming
// the problem, and the store is exactly as before.
func TestBadItems(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", lethe.MaxDepth) + strings.Repeat("]", lethe.MaxDepth)
	deepOK := strings.Repeat("[", lethe.MaxDepth-1) + strings.Repeat("]", lethe.MaxDepth-1)
	big := `{"id":"big","x":"` + strings.Repeat("a", lethe.MaxItemSize) + `"}`
	for _, tc := range []struct {
		name, doc, msg string
		code           int
	}{
		{"empty", ``, "empty", 400},
		{"spaces", `   `, "empty", 400},
		{"not JSON", `hello`, "expected a value", 400},
		{"array", `[{"id":"a"}]`, "must be a JSON object", 400},
		{"string", `"a"`, "must be a JSON object", 400},
		{"number", `12`, "must be a JSON object", 400},
		{"null", `null`, "must be a JSON object", 400},
		{"truncated", `{"id":"a"`, "unexpected end", 400},
		{"trailing data", `{"id":"a"} {}`, "data after the end", 400},
		{"trailing comma", `{"id":"a",}`, "property name", 400},
		{"single quotes", `{'id':'a'}`, "property name", 400},
		{"bad escape", `{"id":"a\x"}`, "bad escape", 400},
		{"bad unicode escape", `{"id":"a\u12"}`, `bad \u escape`, 400},
		{"control char", "{\"id\":\"a\nb\"}", "control character", 400},
		{"invalid UTF-8", "{\"id\":\"a\xff\"}", "invalid UTF-8", 400},
		{"bad number", `{"id":"a","n":01}`, "expected ',' or '}'", 400},
		{"bad number 2", `{"id":"a","n":1.}`, "malformed number", 400},
		{"bad number 3", `{"id":"a","n":-}`, "malformed number", 400},
		{"bad literal", `{"id":"a","n":tru}`, "expected a value", 400},
		{"missing colon", `{"id" "a"}`, "expected ':'", 400},
		{"no id", `{"name":"a"}`, "no 'id'", 400},
		{"numeric id", `{"id":1}`, "must be a string", 400},
		{"null id", `{"id":null}`, "must be a string", 400},
		{"empty id", `{"id":""}`, "empty", 400},
		{"id too long", `{"id":"` + strings.Repeat("a", lethe.MaxIDLength+1) + `"}`, "over the limit", 400},
		{"duplicate id", `{"id":"a","id":"b"}`, "twice", 400},
		{"duplicate ttl", `{"id":"a","ttl":1,"ttl":2}`, "twice", 400},
		{"too deep", `{"id":"a","x":` + deep + `}`, "nested deeper than 128", 400},
		{"too large", big, "over the limit", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newContainer(t, lethe.TTLNever)
			old := create(t, c, `{"id":"a","v":1}`)
			for _, write := range []struct {
				name string
				f    func() (lethe.ItemResponse, error)
			}{
				{"create", func() (lethe.ItemResponse, error) {
					return c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(tc.doc), nil)
				}},
				{"upsert", func() (lethe.ItemResponse, error) {
					return c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(tc.doc), nil)
				}},
				{"replace", func() (lethe.ItemResponse, error) {
					return c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(tc.doc), nil)
				}},
			} {
				r, err := write.f()
				require.Error(t, err, write.name)
				assert.Equal(t, tc.code, status(err), "%s: %v", write.name, err)
				assert.Equal(t, tc.code, r.StatusCode)
				assert.Contains(t, err.Error(), tc.msg, write.name)
			}
			if tc.code == 413 {
				require.ErrorIs(t, func() error { _, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(tc.doc), nil); return err }(), lethe.ErrRequestTooLarge)
			}
			got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
			require.NoError(t, err)
			assert.Equal(t, old.Value, got.Value)
			assert.Equal(t, int64(1), c.Stats().Items)
		})
	}
	t.Run("deepest allowed", func(t *testing.T) {
		c, _ := newContainer(t, lethe.TTLNever)
		create(t, c, `{"id":"a","x":`+deepOK+`}`)
	})
	t.Run("escaped id", func(t *testing.T) {
		c, _ := newContainer(t, lethe.TTLNever)
		create(t, c, `{"id":"\u00e9t\u00e9 \ud83d\ude00"}`)
		assert.True(t, exists(t, c, "été 😀"))
	})
	t.Run("ids with the characters REST paths trip over", func(t *testing.T) {
		// Cosmos DB stores any id; only its gateways misread some in
		// paths (cosmosrest reproduces that). lethe takes them as they are.
		c, _ := newContainer(t, lethe.TTLNever)
		for _, id := range []string{"a/b", `a\b`, "a?b", "a#b", "a%20b", "a ", "a\r\n\tb", "/"} {
			doc, _ := json.Marshal(map[string]string{"id": id})
			create(t, c, string(doc))
			assert.True(t, exists(t, c, id), "%q", id)
			_, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), id, doc, nil)
			require.NoError(t, err, "%q", id)
			_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
			require.NoError(t, err, "%q", id)
			assert.False(t, exists(t, c, id), "%q", id)
		}
	})
	t.Run("bad ids on reads and deletes", func(t *testing.T) {
		c, _ := newContainer(t, lethe.TTLNever)
		for _, id := range []string{"", strings.Repeat("x", 1024), "\xff"} {
			_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), id, nil)
			require.ErrorIs(t, err, lethe.ErrBadRequest, "%q", id)
			_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
			require.ErrorIs(t, err, lethe.ErrBadRequest, "%q", id)
		}
	})
}

func TestContainers(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "b", DefaultTimeToLive: 60, Throughput: 400})
	require.NoError(t, err)
	assert.Equal(t, "b", c.ID())
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "a"})
	require.NoError(t, err)
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "a"})
	require.ErrorIs(t, err, lethe.ErrConflict)
	assert.Equal(t, []string{"a", "b"}, s.ContainerIDs())

	got, err := s.Container("b")
	require.NoError(t, err)
	assert.Same(t, c, got)
	_, err = s.Container("zzz")
	require.ErrorIs(t, err, lethe.ErrNotFound)

	p, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.ContainerProperties{ID: "b", DefaultTimeToLive: 60, Throughput: 400}, p)
	err = c.Replace(ctx, lethe.ContainerProperties{ID: "other"})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	require.NoError(t, c.Replace(ctx, lethe.ContainerProperties{ID: "b", DefaultTimeToLive: 30,
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeLazy}}))
	p, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.TTL(30), p.DefaultTimeToLive)
	assert.Equal(t, lethe.IndexingModeLazy, p.IndexingPolicy.IndexingMode)
	p.IndexingPolicy.IndexingMode = lethe.IndexingModeNone
	p2, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.IndexingModeLazy, p2.IndexingPolicy.IndexingMode, "Read returns a copy")

	create(t, c, `{"id":"x"}`)
	require.NoError(t, s.DeleteContainer(ctx, "b"))
	require.ErrorIs(t, s.DeleteContainer(ctx, "b"), lethe.ErrNotFound)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound, "a deleted container's handle")
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"y"}`), nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	c2, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "b"})
	require.NoError(t, err)
	assert.False(t, exists(t, c2, "x"), "a new container of the same id starts empty")
}

func TestBadContainerIDs(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	for _, id := range []string{"", "a/b", `a\b`, "a?b", "a#b", strings.Repeat("é", 256), "\xff"} {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: id})
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%q", id)
	}
	_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: strings.Repeat("é", 255)})
	require.NoError(t, err, "255 characters are allowed, whatever their bytes")
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "t", Throughput: -1})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Len(t, s.ContainerIDs(), 1)
}

// TestClosed: after Close every call fails with ErrClosed.
func TestClosed(t *testing.T) {
	t.Parallel()
	s, err := lethe.Open(&lethe.Options{Clock: lethe.NewManualClock(t0)})
	require.NoError(t, err)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, err)
	create(t, c, `{"id":"a"}`)
	require.NoError(t, s.Close())
	calls := map[string]error{}
	_, calls["CreateContainer"] = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "d"})
	_, calls["Container"] = s.Container("c")
	calls["DeleteContainer"] = s.DeleteContainer(ctx, "c")
	_, calls["Read"] = c.Read(ctx)
	calls["Replace"] = c.Replace(ctx, lethe.ContainerProperties{ID: "c"})
	_, calls["Purge"] = c.Purge(ctx)
	_, calls["CreateItem"] = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil)
	_, calls["ReadItem"] = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	_, calls["ReplaceItem"] = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a"}`), nil)
	_, calls["UpsertItem"] = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), nil)
	_, calls["DeleteItem"] = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", nil)
	for name, err := range calls {
		require.ErrorIs(t, err, lethe.ErrClosed, name)
	}
	assert.Nil(t, s.ContainerIDs())
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := c.CreateItem(cctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, exists(t, c, "a"))
	//lint:ignore SA1012 a nil context must not panic
	_, err = c.ReadItem(nil, lethe.NewPartitionKey(), "a", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
}

// TestErrors: the error type maps status codes onto the sentinels.
func TestErrors(t *testing.T) {
	t.Parallel()
	sentinels := map[int]error{400: lethe.ErrBadRequest, 404: lethe.ErrNotFound, 409: lethe.ErrConflict,
		412: lethe.ErrPreconditionFailed, 413: lethe.ErrRequestTooLarge, 429: lethe.ErrTooManyRequests}
	for code, want := range sentinels {
		err := fmt.Errorf("wrapped: %w", &lethe.Error{StatusCode: code, Op: "ReadItem", Container: "c", ItemID: "i", Message: "m"})
		for other, s := range sentinels {
			assert.Equal(t, other == code, errors.Is(err, s), "%d is %d", code, other)
		}
		assert.NotErrorIs(t, err, lethe.ErrClosed)
		var e *lethe.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, code, e.StatusCode)
		assert.Contains(t, err.Error(), `ReadItem container "c" item "i"`)
		assert.True(t, strings.HasPrefix(want.Error(), "lethe: "))
	}
	cause := errors.New("cause")
	assert.ErrorIs(t, &lethe.Error{StatusCode: 400, Err: cause}, cause)
}

// TestCharges: the documented table, deterministic, and TTL costs nothing.
func TestCharges(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, 100)
	r := create(t, c, `{"id":"a","ttl":50,"pad":"`+strings.Repeat("x", 900)+`"}`)
	r2 := create(t, c, `{"id":"b","pad":"`+strings.Repeat("x", 900)+`"}`)
	assert.Equal(t, 5.5, r.RequestCharge)
	assert.Equal(t, r.RequestCharge, r2.RequestCharge, "a ttl property costs nothing")
	big := create(t, c, `{"id":"c","pad":"`+strings.Repeat("x", 100*1024-30)+`"}`)
	assert.Equal(t, 5.5+99*0.5, big.RequestCharge)
	read, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, 1.0, read.RequestCharge)
	read, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "c", nil)
	require.NoError(t, err)
	assert.Equal(t, 10.0, read.RequestCharge, "100 KB read costs 10 RU")
	rep, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "b", []byte(`{"id":"b"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 11.0, rep.RequestCharge)
	up, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 11.0, up.RequestCharge)
	del, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.NoError(t, err)
	assert.Equal(t, 5.5, del.RequestCharge)
	miss, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.Error(t, err)
	assert.Equal(t, 1.24, miss.RequestCharge)
	bad, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{`), nil)
	require.Error(t, err)
	assert.Equal(t, 1.24, bad.RequestCharge)
}

func TestStats(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 10)
	a := create(t, c, `{"id":"a"}`)
	b := create(t, c, `{"id":"b","ttl":-1}`)
	st := c.Stats()
	assert.Equal(t, int64(2), st.Items)
	assert.Equal(t, int64(len(a.Value)+len(b.Value)), st.Bytes)
	clock.Advance(15 * time.Second)
	st = c.Stats()
	assert.Equal(t, lethe.ContainerStats{Items: 1, Bytes: int64(len(b.Value)), ExpiredPending: 1, PurgeLag: 5 * time.Second}, st)
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	st = c.Stats()
	assert.Equal(t, lethe.ContainerStats{Items: 1, Bytes: int64(len(b.Value)), Purged: 1, ReaperCharge: 5.5}, st)
}

// TestConcurrentClose: every Close returns only once the reaper has stopped.
func TestConcurrentClose(t *testing.T) {
	t.Parallel()
	s, err := lethe.Open(nil)
	require.NoError(t, err)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
	require.NoError(t, err)
	create(t, c, `{"id":"a"}`)
	done := make(chan error, 4)
	for range 4 {
		go func() { done <- s.Close() }()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
	_, err = c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil).NextPage(ctx)
	require.ErrorIs(t, err, lethe.ErrClosed)
	for _, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
		require.ErrorIs(t, err, lethe.ErrClosed)
	}
}

// TestZeroValues: values not made by the library fail cleanly, never panic.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var s lethe.Store
	_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	_, err = s.Container("c")
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	require.ErrorIs(t, s.DeleteContainer(ctx, "c"), lethe.ErrBadRequest)
	assert.Empty(t, s.ContainerIDs())
	require.NoError(t, s.Close())

	var c lethe.Container
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.Error(t, err)
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), nil)
	require.Error(t, err)
	_, err = c.Purge(ctx)
	require.Error(t, err)
	assert.Equal(t, lethe.ContainerStats{}, c.Stats())
	_, err = c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil).NextPage(ctx)
	require.Error(t, err)
	var p lethe.QueryItemsPager
	assert.False(t, p.More())
	_, err = p.NextPage(ctx)
	require.Error(t, err)
}

// TestDeletedContainer: every call on a deleted container's handle is a 404
// with the Cosmos wording.
func TestDeletedContainer(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, err)
	require.NoError(t, s.DeleteContainer(ctx, "c"))
	errs := []error{c.Replace(ctx, lethe.ContainerProperties{ID: "c"})}
	_, err = c.Read(ctx)
	errs = append(errs, err)
	_, err = c.Purge(ctx)
	errs = append(errs, err)
	_, err = c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil).NextPage(ctx)
	errs = append(errs, err)
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), nil)
	errs = append(errs, err)
	for i, err := range errs {
		require.ErrorIs(t, err, lethe.ErrNotFound, "call %d", i)
		assert.Contains(t, err.Error(), "Entity with the specified id does not exist in the system.")
	}
}

// TestLimitsExactly: the limits themselves are allowed.
func TestLimitsExactly(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	id := strings.Repeat("i", lethe.MaxIDLength)
	create(t, c, `{"id":"`+id+`"}`)
	assert.True(t, exists(t, c, id))
	prefix := `{"id":"big","x":"`
	doc := prefix + strings.Repeat("a", lethe.MaxItemSize-len(prefix)-2) + `"}`
	require.Len(t, doc, lethe.MaxItemSize)
	create(t, c, doc)
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc[:len(doc)-2]+`a"}`), nil)
	require.ErrorIs(t, err, lethe.ErrRequestTooLarge)
}

// TestReadItemAppend: the item is appended to the caller's buffer, which
// the store never keeps.
func TestReadItemAppend(t *testing.T) {
	c, _ := newContainer(t, lethe.TTLOff)
	want := create(t, c, `{"id":"a","v":1}`)
	buf := []byte("prefix:")
	r, err := c.ReadItemAppend(ctx, buf, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, "prefix:"+string(want.Value), string(r.Value))
	assert.Equal(t, want.ETag, r.ETag)
	for i := range r.Value {
		r.Value[i] = 'x'
	}
	r, err = c.ReadItemAppend(ctx, r.Value[:0], lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, string(want.Value), string(r.Value), "the store shares no memory with the buffer")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		r, _ = c.ReadItemAppend(ctx, r.Value[:0], lethe.NewPartitionKey(), "a", nil)
	}), "a reused buffer reads without allocating")
	_, err = c.ReadItemAppend(ctx, nil, lethe.NewPartitionKey(), "missing", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	assert.Contains(t, err.Error(), "ReadItemAppend")
}

// TestManyMembers: documents with many top-level members keep them all, in
// order.
func TestManyMembers(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	var b strings.Builder
	b.WriteString(`{"id":"m"`)
	for i := range 100 {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	b.WriteString(`,"_ts":5}`)
	r := create(t, c, b.String())
	want := strings.TrimSuffix(b.String(), `,"_ts":5}`) + fmt.Sprintf(`,"_ts":%d,"_etag":%q}`, t0.Unix(), r.ETag)
	assert.Equal(t, want, string(r.Value))
}

func TestNoContentResponseOnWrite(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a"}`), o)
	require.NoError(t, err)
	assert.Nil(t, r.Value)
	assert.NotEmpty(t, r.ETag)
	assert.Equal(t, 201, r.StatusCode)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.Equal(t, r.ETag, got.ETag)
	r, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","v":1}`), o)
	require.NoError(t, err)
	assert.Nil(t, r.Value)
}

// TestPurgeLagAfterDefaultChange: an item that expired for good under an
// earlier default keeps the expiry it had, whatever the new default says.
func TestPurgeLagAfterDefaultChange(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 1)
	create(t, c, `{"id":"a"}`)
	clock.Advance(1500 * time.Millisecond) // a expired 0.5 s ago
	setDefault(t, c, 10)
	st := c.Stats()
	assert.Equal(t, int64(1), st.ExpiredPending)
	assert.Equal(t, 500*time.Millisecond, st.PurgeLag)
	// A later default change, and an item expired under the current one.
	clock.Advance(time.Second)
	setDefault(t, c, 3)
	create(t, c, `{"id":"b"}`)
	clock.Advance(4 * time.Second) // b expired 1 s ago
	st = c.Stats()
	assert.Equal(t, int64(2), st.ExpiredPending)
	assert.Equal(t, 5500*time.Millisecond, st.PurgeLag, "a expired 5.5 s ago")
	_, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.ContainerStats{Purged: 2, ReaperCharge: 11}, c.Stats())
}
