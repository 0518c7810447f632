package lethe_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTTLMatrix pins the nine cells of SPEC §2 at the boundary: one
// nanosecond before expiry the item is visible, at expiry it is gone.
func TestTTLMatrix(t *testing.T) {
	t.Parallel()
	const neverExpires = 0
	containers := []struct {
		name string
		def  lethe.TTL
	}{{"off", lethe.TTLOff}, {"-1", lethe.TTLNever}, {"1000", 1000}}
	items := []struct {
		name string
		ttl  string // the ttl member, or "" for none
	}{{"absent", ""}, {"-1", `,"ttl":-1`}, {"2000", `,"ttl":2000`}}
	// want[item][container]: seconds of life, or neverExpires.
	want := [3][3]int{
		{neverExpires, neverExpires, 1000},
		{neverExpires, neverExpires, neverExpires},
		{neverExpires, 2000, 2000},
	}
	for i, it := range items {
		for j, ct := range containers {
			t.Run("item "+it.name+"/container "+ct.name, func(t *testing.T) {
				c, clock := newContainer(t, ct.def)
				create(t, c, `{"id":"x"`+it.ttl+`}`)
				life := want[i][j]
				if life == neverExpires {
					clock.Advance(time.Duration(math.MaxInt32) * time.Second * 2)
					assert.True(t, exists(t, c, "x"), "expired but should never")
					return
				}
				clock.Set(t0.Add(time.Duration(life)*time.Second - time.Nanosecond))
				assert.True(t, exists(t, c, "x"), "gone one nanosecond before expiry")
				clock.Set(t0.Add(time.Duration(life) * time.Second))
				assert.False(t, exists(t, c, "x"), "visible at its expiry")
			})
		}
	}
}

// TestTTLFullPrecision: lastWrite keeps full precision, _ts shows seconds,
// and a ttl of 1 lives one second, not until the next whole second.
func TestTTLFullPrecision(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, lethe.TTLNever)
	clock.Set(t0.Add(900 * time.Millisecond))
	r := create(t, c, `{"id":"x","ttl":1}`)
	assert.Contains(t, string(r.Value), fmt.Sprintf(`"_ts":%d`, t0.Unix()))
	clock.Set(t0.Add(1900*time.Millisecond - time.Nanosecond))
	assert.True(t, exists(t, c, "x"))
	clock.Set(t0.Add(1900 * time.Millisecond))
	assert.False(t, exists(t, c, "x"))
}

// invalidTTLs are item ttl values that every write must reject.
var invalidTTLs = []string{"0", "-2", "-1000", "1.5", `"10"`, "true", "false", "{}", "[]", `{"a":1}`, "[10]",
	"2147483648", "1e20", "-1e20", "-0", "0.0", "-2147483649", "99999999999999999999999",
	"0.99999999999999999", "1.0000000000000001", "2147483647.0000001", "-1.00000000000000001", "-0.99999999999999999",
	"1e-400", "1e400", "0e5", "1e999999999999999999999", "2.147483648e9", "-1e0000000000000000000000000001"}

// TestInvalidItemTTL: an invalid ttl is rejected with 400 under every
// container setting, by create, replace and upsert, and changes nothing.
func TestInvalidItemTTL(t *testing.T) {
	t.Parallel()
	for _, def := range []lethe.TTL{lethe.TTLOff, lethe.TTLNever, 1000} {
		for _, v := range invalidTTLs {
			t.Run(fmt.Sprintf("container %v/ttl %s", def, v), func(t *testing.T) {
				c, _ := newContainer(t, def)
				old := create(t, c, `{"id":"old","v":1}`)
				doc := []byte(`{"id":"new","ttl":` + v + `}`)
				r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), doc, nil)
				require.ErrorIs(t, err, lethe.ErrBadRequest)
				assert.Equal(t, 400, r.StatusCode)
				assert.Contains(t, err.Error(), "The input ttl '"+v+"' is invalid")
				assert.False(t, exists(t, c, "new"))

				for _, write := range []func() error{
					func() error {
						_, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "old", []byte(`{"id":"old","v":2,"ttl":`+v+`}`), nil)
						return err
					},
					func() error {
						_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"old","v":2,"ttl":`+v+`}`), nil)
						return err
					},
				} {
					require.ErrorIs(t, write(), lethe.ErrBadRequest)
					got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "old", nil)
					require.NoError(t, err)
					assert.Equal(t, string(old.Value), string(got.Value), "a failed write changed the item")
					assert.Equal(t, old.ETag, got.ETag)
				}
				assert.Equal(t, int64(1), c.Stats().Items)
			})
		}
	}
}

// TestValidItemTTLSpellings: integral values are accepted in any JSON
// spelling, null inherits, and the ttl is stored as written.
func TestValidItemTTLSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl  string
		life time.Duration // 0: never
	}{
		{"1", time.Second}, {"10.0", 10 * time.Second}, {"1e1", 10 * time.Second}, {"2147483647", math.MaxInt32 * time.Second},
		{"-1", 0}, {"-1.0", 0}, {"-10e-1", 0}, {"null", 100 * time.Second}, {"0.5e1", 5 * time.Second},
		{"2.147483647E+9", math.MaxInt32 * time.Second}, {"100000e-5", time.Second},
	} {
		t.Run(tc.ttl, func(t *testing.T) {
			c, clock := newContainer(t, 100)
			r := create(t, c, `{"id":"x","ttl": `+tc.ttl+`}`)
			assert.Contains(t, string(r.Value), `"ttl": `+tc.ttl)
			if tc.life == 0 {
				clock.Advance(1000 * time.Hour)
				assert.True(t, exists(t, c, "x"))
				return
			}
			clock.Set(t0.Add(tc.life - 1))
			assert.True(t, exists(t, c, "x"))
			clock.Set(t0.Add(tc.life))
			assert.False(t, exists(t, c, "x"))
		})
	}
}

// TestTTLKeptWhileOff: with TTL off an item's ttl is stored and returned
// as written, still validated, and interpreted once TTL is turned on.
func TestTTLKeptWhileOff(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, lethe.TTLOff)
	r := create(t, c, `{"id":"x","ttl":5}`)
	assert.Contains(t, string(r.Value), `"ttl":5`)
	clock.Advance(time.Hour)
	assert.True(t, exists(t, c, "x"))
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"y","ttl":0}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	setDefault(t, c, lethe.TTLNever)
	assert.False(t, exists(t, c, "x"), "ttl 5 written an hour ago must expire when TTL is turned on")
}

// TestInvalidContainerTTL: negative defaults other than -1 are rejected,
// and a failed replace leaves the container as it was.
func TestInvalidContainerTTL(t *testing.T) {
	t.Parallel()
	for _, def := range []lethe.TTL{-2, -3, -1000, math.MinInt32} {
		t.Run(def.String(), func(t *testing.T) {
			s, _ := newStore(t)
			_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def})
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), fmt.Sprintf("The input defaultTtl '%d' is invalid", def))
			assert.Empty(t, s.ContainerIDs())

			c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
			require.NoError(t, err)
			err = c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def})
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			p, err := c.Read(ctx)
			require.NoError(t, err)
			assert.Equal(t, lethe.TTL(10), p.DefaultTimeToLive)
		})
	}
}

// TestIndexingNoneWithTTL: SPEC §4.
func TestIndexingNoneWithTTL(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	none := &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeNone}
	for _, def := range []lethe.TTL{lethe.TTLNever, 10} {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "n", DefaultTimeToLive: def, IndexingPolicy: none})
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		assert.Contains(t, err.Error(), "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection")
	}
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "n", IndexingPolicy: none})
	require.NoError(t, err)
	err = c.Replace(ctx, lethe.ContainerProperties{ID: "n", DefaultTimeToLive: 5, IndexingPolicy: none})
	require.ErrorIs(t, err, lethe.ErrBadRequest)

	c2, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "t", DefaultTimeToLive: 5})
	require.NoError(t, err)
	err = c2.Replace(ctx, lethe.ContainerProperties{ID: "t", DefaultTimeToLive: 5, IndexingPolicy: none})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	p, err := c2.Read(ctx)
	require.NoError(t, err)
	assert.Nil(t, p.IndexingPolicy)
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "l", IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: "eager"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
}

// TestExpiredItemOperations: an expired item that is still present does
// not exist for any operation (SPEC §3).
func TestExpiredItemOperations(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*lethe.Container, lethe.ItemResponse) {
		c, clock := newContainer(t, 10)
		r := create(t, c, `{"id":"x","v":1}`)
		clock.Advance(10 * time.Second)
		require.Equal(t, int64(1), c.Stats().ExpiredPending, "the item must still be present")
		return c, r
	}
	t.Run("read", func(t *testing.T) {
		c, _ := setup(t)
		_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
		require.ErrorIs(t, err, lethe.ErrNotFound)
	})
	t.Run("replace", func(t *testing.T) {
		c, _ := setup(t)
		r, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "x", []byte(`{"id":"x","v":2}`), nil)
		require.ErrorIs(t, err, lethe.ErrNotFound)
		assert.Equal(t, 404, r.StatusCode)
	})
	t.Run("delete", func(t *testing.T) {
		c, _ := setup(t)
		_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "x", nil)
		require.ErrorIs(t, err, lethe.ErrNotFound)
	})
	t.Run("create", func(t *testing.T) {
		c, _ := setup(t)
		r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x","v":2}`), nil)
		require.NoError(t, err)
		assert.Equal(t, 201, r.StatusCode)
		assert.Contains(t, string(r.Value), `"v":2`)
		st := c.Stats()
		assert.Equal(t, int64(1), st.Items)
		assert.Equal(t, int64(0), st.ExpiredPending)
	})
	t.Run("upsert with stale If-Match", func(t *testing.T) {
		c, old := setup(t)
		r, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x","v":2}`), &lethe.ItemOptions{IfMatchEtag: old.ETag})
		require.NoError(t, err)
		assert.Equal(t, 201, r.StatusCode)
		r, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x","v":3}`), &lethe.ItemOptions{IfMatchEtag: old.ETag})
		require.ErrorIs(t, err, lethe.ErrPreconditionFailed, "the new item is live: If-Match applies again")
		assert.Equal(t, 412, r.StatusCode)
	})
	t.Run("stats", func(t *testing.T) {
		c, _ := setup(t)
		st := c.Stats()
		assert.Equal(t, int64(0), st.Items)
		assert.Equal(t, int64(0), st.Bytes)
		assert.Equal(t, time.Duration(0), st.PurgeLag)
	})
}

// TestWriteResetsCountdown: every write sets _ts and restarts the countdown;
// a read does not.
func TestWriteResetsCountdown(t *testing.T) {
	t.Parallel()
	for _, write := range []string{"replace", "upsert"} {
		t.Run(write, func(t *testing.T) {
			c, clock := newContainer(t, 10)
			create(t, c, `{"id":"x"}`)
			clock.Advance(9 * time.Second)
			r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
			require.NoError(t, err)
			assert.Contains(t, string(r.Value), fmt.Sprintf(`"_ts":%d`, t0.Unix()), "a read changed _ts")
			if write == "replace" {
				r, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "x", []byte(`{"id":"x"}`), nil)
			} else {
				r, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x"}`), nil)
			}
			require.NoError(t, err)
			assert.Equal(t, 200, r.StatusCode)
			assert.Contains(t, string(r.Value), fmt.Sprintf(`"_ts":%d`, t0.Unix()+9))
			clock.Advance(10*time.Second - 1)
			assert.True(t, exists(t, c, "x"))
			clock.Advance(1)
			assert.False(t, exists(t, c, "x"))
		})
	}
}

// TestChangingItemTTL: writing the item with another ttl, removing it, or
// setting -1.
func TestChangingItemTTL(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 100)
	create(t, c, `{"id":"x","ttl":5}`)
	_, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "x", []byte(`{"id":"x","ttl":-1}`), nil)
	require.NoError(t, err)
	clock.Advance(1000 * time.Second)
	assert.True(t, exists(t, c, "x"), "ttl -1 overrides the default")
	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "x", []byte(`{"id":"x"}`), nil)
	require.NoError(t, err)
	clock.Advance(100 * time.Second)
	assert.False(t, exists(t, c, "x"), "without ttl the item inherits the default")
}

// TestRetroactiveDefaultChange: a change of the container default applies at
// once to every item, computed from each item's last write.
func TestRetroactiveDefaultChange(t *testing.T) {
	t.Parallel()
	type check struct {
		at      time.Duration // since the write
		visible bool
	}
	for _, tc := range []struct {
		name     string
		from, to lethe.TTL
		ttl      string // the item's ttl member
		changeAt time.Duration
		checks   []check
	}{
		{"off to 100", lethe.TTLOff, 100, "", 50 * time.Second, []check{{100*time.Second - 1, true}, {100 * time.Second, false}}},
		{"off to 100 after its expiry", lethe.TTLOff, 100, "", 150 * time.Second, []check{{150 * time.Second, false}}},
		{"off to -1, own ttl", lethe.TTLOff, lethe.TTLNever, `,"ttl":30`, 10 * time.Second, []check{{30*time.Second - 1, true}, {30 * time.Second, false}}},
		{"100 to 200", 100, 200, "", 50 * time.Second, []check{{150 * time.Second, true}, {200*time.Second - 1, true}, {200 * time.Second, false}}},
		{"100 to 20 (shorter, already past)", 100, 20, "", 50 * time.Second, []check{{50 * time.Second, false}}},
		{"100 to 60", 100, 60, "", 50 * time.Second, []check{{60*time.Second - 1, true}, {60 * time.Second, false}}},
		{"100 to -1", 100, lethe.TTLNever, "", 50 * time.Second, []check{{1000 * time.Hour, true}}},
		{"100 to off", 100, lethe.TTLOff, "", 50 * time.Second, []check{{1000 * time.Hour, true}}},
		{"-1 to 100", lethe.TTLNever, 100, "", 50 * time.Second, []check{{100*time.Second - 1, true}, {100 * time.Second, false}}},
		{"-1 to off, own ttl", lethe.TTLNever, lethe.TTLOff, `,"ttl":30`, 10 * time.Second, []check{{1000 * time.Hour, true}}},
		{"100 to 200, own ttl wins", 100, 200, `,"ttl":30`, 10 * time.Second, []check{{30*time.Second - 1, true}, {30 * time.Second, false}}},
		{"100 to 200, ttl -1 wins", 100, 200, `,"ttl":-1`, 10 * time.Second, []check{{1000 * time.Hour, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clock := newContainer(t, tc.from)
			create(t, c, `{"id":"x"`+tc.ttl+`}`)
			clock.Set(t0.Add(tc.changeAt))
			setDefault(t, c, tc.to)
			for _, ch := range tc.checks {
				if t0.Add(ch.at).Before(clock.Now()) {
					continue
				}
				clock.Set(t0.Add(ch.at))
				assert.Equal(t, ch.visible, exists(t, c, "x"), "at %v", ch.at)
			}
		})
	}
}

// TestExpiryIsFinal: an item that expired under the settings before a
// change stays gone after it, purged or not.
func TestExpiryIsFinal(t *testing.T) {
	t.Parallel()
	for _, to := range []lethe.TTL{lethe.TTLOff, lethe.TTLNever, 1000} {
		t.Run("10 to "+to.String(), func(t *testing.T) {
			c, clock := newContainer(t, 10)
			create(t, c, `{"id":"expired"}`)
			create(t, c, `{"id":"own","ttl":5}`)
			clock.Advance(5 * time.Second)
			create(t, c, `{"id":"live"}`)
			clock.Advance(5 * time.Second) // "expired" and "own" are now expired, "live" has 5 s left
			require.Equal(t, int64(2), c.Stats().ExpiredPending)
			setDefault(t, c, to)
			assert.False(t, exists(t, c, "expired"))
			assert.False(t, exists(t, c, "own"))
			assert.True(t, exists(t, c, "live"))
			st := c.Stats()
			assert.Equal(t, int64(1), st.Items)
			assert.Equal(t, int64(2), st.ExpiredPending, "the change touches no item: the reaper purges them")
			_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"expired","v":2}`), nil)
			require.NoError(t, err, "a create over an item expired for good succeeds")
			_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "own", []byte(`{"id":"own"}`), nil)
			require.ErrorIs(t, err, lethe.ErrNotFound)
			setDefault(t, c, lethe.TTLOff)
			setDefault(t, c, 10)
			assert.False(t, exists(t, c, "own"), "switching back and forth must not resurrect")
			n, err := c.Purge(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the reaper purges what expired for good")
			assert.Equal(t, int64(0), c.Stats().ExpiredPending)
		})
	}
}

// TestTTLDuration covers the TTL helpers.
func TestTTLDuration(t *testing.T) {
	t.Parallel()
	assert.Equal(t, time.Duration(0), lethe.TTLOff.Duration())
	assert.Equal(t, time.Duration(0), lethe.TTLNever.Duration())
	assert.Equal(t, 90*time.Second, lethe.TTL(90).Duration())
	assert.Equal(t, "off", lethe.TTLOff.String())
	assert.Equal(t, "never", lethe.TTLNever.String())
	assert.Equal(t, "90s", lethe.TTL(90).String())
	assert.True(t, strings.HasPrefix(lethe.MaxTTL.String(), "2147483647"))
}

// TestTTLNullInherits: "ttl": null inherits under every container setting.
func TestTTLNullInherits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		def  lethe.TTL
		life time.Duration // 0: never
	}{{lethe.TTLOff, 0}, {lethe.TTLNever, 0}, {7, 7 * time.Second}} {
		t.Run(tc.def.String(), func(t *testing.T) {
			c, clock := newContainer(t, tc.def)
			r := create(t, c, `{"id":"x","ttl":null}`)
			assert.Contains(t, string(r.Value), `"ttl":null`)
			if tc.life == 0 {
				clock.Advance(1000 * time.Hour)
				assert.True(t, exists(t, c, "x"))
				return
			}
			clock.Advance(tc.life - 1)
			assert.True(t, exists(t, c, "x"))
			clock.Advance(1)
			assert.False(t, exists(t, c, "x"))
		})
	}
}

// TestDefaultChangeTouchesNoItem: a change of the default does no work per
// item, so it never stalls readers however large the backlog; the expired
// items stay expired and wait for the reaper.
func TestDefaultChangeTouchesNoItem(t *testing.T) {
	c, clock := newContainer(t, 10)
	for i := range 50_000 {
		create(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	clock.Advance(10 * time.Second)
	start := time.Now()
	setDefault(t, c, lethe.TTLOff)
	elapsed := time.Since(start)
	st := c.Stats()
	assert.Equal(t, int64(50_000), st.ExpiredPending, "the change purged inline")
	assert.Equal(t, int64(0), st.Items)
	assert.Less(t, elapsed, 50*time.Millisecond)
	assert.False(t, exists(t, c, "123"))
}

// TestTTLFromDuration: a duration becomes the TTL of the whole seconds
// that hold it, at least 1 and at most MaxTTL.
func TestTTLFromDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want lethe.TTL
	}{
		{time.Second, 1},
		{time.Nanosecond, 1},
		{1200 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{2*time.Second + 1, 3},
		{time.Hour, 3600},
		{0, 1},
		{-time.Hour, 1},
		{math.MinInt64, 1},
		{time.Duration(lethe.MaxTTL) * time.Second, lethe.MaxTTL},
		{time.Duration(lethe.MaxTTL)*time.Second + 1, lethe.MaxTTL},
		{math.MaxInt64, lethe.MaxTTL},
	} {
		got := lethe.TTLFromDuration(tc.d)
		assert.Equal(t, tc.want, got, "%v", tc.d)
		assert.Positive(t, got, "never off or never-expire")
		if tc.d > 0 && tc.d <= time.Duration(lethe.MaxTTL)*time.Second {
			assert.GreaterOrEqual(t, got.Duration(), tc.d, "rounds up")
			assert.Less(t, got.Duration()-tc.d, time.Second)
		}
	}
}
