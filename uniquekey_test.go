package lethe_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/stretchr/testify/require"
)

// uniqueContainer creates a container partitioned by /pk whose unique key
// policy has keys, each a list of paths, and the default TTL def.
func uniqueContainer(t *testing.T, s *lethe.Store, def lethe.TTL, keys ...[]string) *lethe.Container {
	t.Helper()
	return mustContainer(t, s, uniqueProps(def, keys...))
}

func uniqueProps(def lethe.TTL, keys ...[]string) lethe.ContainerProperties {
	up := &lethe.UniqueKeyPolicy{}
	for _, k := range keys {
		up.UniqueKeys = append(up.UniqueKeys, lethe.UniqueKey{Paths: k})
	}
	return lethe.ContainerProperties{ID: "u", DefaultTimeToLive: def, UniqueKeyPolicy: up,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
}

// pkOf returns the partition key value of a test document's "pk".
func pkOf(t *testing.T, doc string) lethe.PartitionKey {
	t.Helper()
	var v struct{ PK string }
	require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
	return lethe.NewPartitionKeyString(v.PK)
}

func TestUniqueKeyRules(t *testing.T) {
	tests := []struct {
		name string
		keys [][]string
		docs []string // created in order
		want []int    // each create's status: 0 created, 409 refused
	}{
		{"one path", [][]string{{"/email"}},
			[]string{`{"id":"a","pk":"p","email":"x@y"}`, `{"id":"b","pk":"p","email":"x@y"}`, `{"id":"c","pk":"p","email":"z@y"}`},
			[]int{0, 409, 0}},
		{"case-sensitive values", [][]string{{"/email"}},
			[]string{`{"id":"a","pk":"p","email":"x@y"}`, `{"id":"b","pk":"p","email":"X@Y"}`},
			[]int{0, 0}},
		{"case-sensitive paths", [][]string{{"/email"}},
			[]string{`{"id":"a","pk":"p","email":"x","Email":"1"}`, `{"id":"b","pk":"p","email":"y","Email":"1"}`},
			[]int{0, 0}},
		{"per partition, not across", [][]string{{"/email"}},
			[]string{`{"id":"a","pk":"p","email":"x"}`, `{"id":"b","pk":"q","email":"x"}`, `{"id":"c","pk":"q","email":"x"}`},
			[]int{0, 0, 409}},
		{"several paths together", [][]string{{"/first", "/last"}},
			[]string{`{"id":"a","pk":"p","first":"A","last":"B"}`, `{"id":"b","pk":"p","first":"A","last":"C"}`,
				`{"id":"c","pk":"p","first":"D","last":"B"}`, `{"id":"d","pk":"p","first":"A","last":"B"}`},
			[]int{0, 0, 0, 409}},
		{"several keys, each", [][]string{{"/email"}, {"/phone"}},
			[]string{`{"id":"a","pk":"p","email":"x","phone":"1"}`, `{"id":"b","pk":"p","email":"y","phone":"1"}`,
				`{"id":"c","pk":"p","email":"x","phone":"2"}`, `{"id":"d","pk":"p","email":"y","phone":"2"}`},
			[]int{0, 409, 409, 0}},
		{"missing path counts as null", [][]string{{"/email"}},
			[]string{`{"id":"a","pk":"p"}`, `{"id":"b","pk":"p"}`, `{"id":"c","pk":"p","email":null}`, `{"id":"d","pk":"p","email":"x"}`},
			[]int{0, 409, 409, 0}},
		{"nested paths", [][]string{{"/address/zip"}},
			[]string{`{"id":"a","pk":"p","address":{"zip":"1"}}`, `{"id":"b","pk":"p","address":{"zip":"2"}}`,
				`{"id":"c","pk":"p","address":{"zip":"1","city":"x"}}`},
			[]int{0, 0, 409}},
		{"values by type and value", [][]string{{"/n"}},
			[]string{`{"id":"a","pk":"p","n":1}`, `{"id":"b","pk":"p","n":"1"}`, `{"id":"c","pk":"p","n":1.0}`, `{"id":"d","pk":"p","n":true}`},
			[]int{0, 0, 409, 0}},
		{"objects deeply", [][]string{{"/o"}},
			[]string{`{"id":"a","pk":"p","o":{"x":1,"y":2}}`, `{"id":"b","pk":"p","o":{"y":2,"x":1}}`, `{"id":"c","pk":"p","o":{"x":2}}`},
			[]int{0, 409, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			c := uniqueContainer(t, s, lethe.TTLOff, tc.keys...)
			for i, doc := range tc.docs {
				_, err := c.CreateItem(ctx, pkOf(t, doc), []byte(doc), nil)
				require.Equal(t, tc.want[i], status(err), "create %d: %s: %v", i, doc, err)
				if tc.want[i] == 409 {
					require.ErrorIs(t, err, lethe.ErrConflict)
					require.ErrorContains(t, err, "Unique index constraint violation.")
				}
			}
		})
	}
}

func TestUniqueKeyWrites(t *testing.T) {
	s, _ := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	p := lethe.NewPartitionKeyString("p")
	for _, doc := range []string{`{"id":"a","pk":"p","email":"a"}`, `{"id":"b","pk":"p","email":"b"}`} {
		_, err := c.CreateItem(ctx, p, []byte(doc), nil)
		require.NoError(t, err)
	}
	// A replace, upsert or patch that keeps the item's own value is fine.
	_, err := c.ReplaceItem(ctx, p, "a", []byte(`{"id":"a","pk":"p","email":"a","v":1}`), nil)
	require.NoError(t, err)
	_, err = c.UpsertItem(ctx, p, []byte(`{"id":"a","pk":"p","email":"a","v":2}`), nil)
	require.NoError(t, err)
	var keep lethe.PatchOperations
	keep.AppendSet("/v", 3)
	_, err = c.PatchItem(ctx, p, "a", keep, nil)
	require.NoError(t, err)

	// Taking another item's value is refused, and changes nothing.
	_, err = c.ReplaceItem(ctx, p, "a", []byte(`{"id":"a","pk":"p","email":"b"}`), nil)
	require.Equal(t, 409, status(err))
	_, err = c.UpsertItem(ctx, p, []byte(`{"id":"a","pk":"p","email":"b"}`), nil)
	require.Equal(t, 409, status(err))
	_, err = c.UpsertItem(ctx, p, []byte(`{"id":"new","pk":"p","email":"b"}`), nil)
	require.Equal(t, 409, status(err))
	var take lethe.PatchOperations
	take.AppendSet("/email", "b")
	_, err = c.PatchItem(ctx, p, "a", take, nil)
	require.Equal(t, 409, status(err))
	var drop lethe.PatchOperations
	drop.AppendRemove("/email")
	_, err = c.PatchItem(ctx, p, "b", drop, nil) // b without email: null, which no one holds
	require.NoError(t, err)
	r, err := c.ReadItem(ctx, p, "a", nil)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(r.Value, &got))
	require.Equal(t, "a", got["email"])
	require.Equal(t, 3.0, got["v"])

	// A value a replace, patch or delete gives up is free at once.
	_, err = c.ReplaceItem(ctx, p, "a", []byte(`{"id":"a","pk":"p","email":"a2"}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"c","pk":"p","email":"a"}`), nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(ctx, p, "c", nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"d","pk":"p","email":"a"}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"e","pk":"p"}`), nil) // null: b's since its patch
	require.Equal(t, 409, status(err))
	require.Zero(t, lethe.UniqueClaims(c), "the writes made hold no claim")
}

func TestUniqueKeyBatch(t *testing.T) {
	s, _ := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	p := lethe.NewPartitionKeyString("p")
	_, err := c.CreateItem(ctx, p, []byte(`{"id":"a","pk":"p","email":"a"}`), nil)
	require.NoError(t, err)

	run := func(build func(b *lethe.TransactionalBatch)) lethe.TransactionalBatchResponse {
		t.Helper()
		b := c.NewTransactionalBatch(p)
		build(&b)
		resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		require.NoError(t, err)
		return resp
	}
	statuses := func(resp lethe.TransactionalBatchResponse) []int {
		var out []int
		for _, r := range resp.OperationResults {
			out = append(out, r.StatusCode)
		}
		return out
	}
	tests := []struct {
		name  string
		build func(b *lethe.TransactionalBatch)
		want  []int // nil: success
	}{
		{"a value held outside the batch", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"x","pk":"p","email":"x"}`), nil)
			b.CreateItem([]byte(`{"id":"y","pk":"p","email":"a"}`), nil)
		}, []int{424, 409}},
		{"two creates of one value", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"x","pk":"p","email":"x"}`), nil)
			b.CreateItem([]byte(`{"id":"y","pk":"p","email":"x"}`), nil)
		}, []int{424, 409}},
		{"a patch that takes a value", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"x","pk":"p","email":"x"}`), nil)
			var ops lethe.PatchOperations
			ops.AppendSet("/email", "x")
			b.PatchItem("a", ops, nil)
		}, []int{424, 409}},
		{"a value given up earlier in the batch", func(b *lethe.TransactionalBatch) {
			b.ReplaceItem("a", []byte(`{"id":"a","pk":"p","email":"a2"}`), nil)
			b.CreateItem([]byte(`{"id":"y","pk":"p","email":"a"}`), nil)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := run(tc.build)
			if tc.want == nil {
				require.True(t, resp.Success, "%v", statuses(resp))
				return
			}
			require.False(t, resp.Success)
			require.Equal(t, tc.want, statuses(resp))
			_, err := c.ReadItem(ctx, p, "x", nil)
			require.ErrorIs(t, err, lethe.ErrNotFound) // nothing applied
		})
	}
	// The last case applied: a holds a2, y holds a.
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"z","pk":"p","email":"a2"}`), nil)
	require.Equal(t, 409, status(err))
}

// An expired item holds no unique value: a create whose value only an
// expired item holds succeeds from the instant of its expiry, before any
// purge, and the purge of the expired one leaves the new one's value held.
func TestUniqueKeyExpiry(t *testing.T) {
	s, clock := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLNever, []string{"/email"})
	p := lethe.NewPartitionKeyString("p")
	_, err := c.CreateItem(ctx, p, []byte(`{"id":"old","pk":"p","email":"e","ttl":10}`), nil)
	require.NoError(t, err)

	clock.Advance(10*time.Second - time.Nanosecond)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"new","pk":"p","email":"e"}`), nil)
	require.Equal(t, 409, status(err), "the holder is live until its expiry")

	clock.Advance(time.Nanosecond)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"new","pk":"p","email":"e"}`), nil)
	require.NoError(t, err, "the holder expired")

	n, err := c.Purge(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"other","pk":"p","email":"e"}`), nil)
	require.Equal(t, 409, status(err), "the purge of the expired holder must leave the new one's value")

	// An expired item of the same id is replaced by a create.
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"x","pk":"p","email":"f","ttl":1}`), nil)
	require.NoError(t, err)
	clock.Advance(time.Second)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"x","pk":"p","email":"f"}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"y","pk":"p","email":"f"}`), nil)
	require.Equal(t, 409, status(err))
}

// N goroutines create items of one unique value in one partition, each
// of its own id (so in different shards): exactly one succeeds.
func TestUniqueKeyConcurrentCreates(t *testing.T) {
	s, _ := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	p := lethe.NewPartitionKeyString("p")
	const rounds, n = 20, 16
	for r := range rounds {
		var wg sync.WaitGroup
		codes := make([]int, n)
		for g := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				doc := fmt.Sprintf(`{"id":"%d-%d","pk":"p","email":"v%d"}`, r, g, r)
				_, err := c.CreateItem(ctx, p, []byte(doc), nil)
				codes[g] = status(err)
			}()
		}
		wg.Wait()
		won := 0
		for _, code := range codes {
			switch code {
			case 0:
				won++
			case 409:
			default:
				t.Fatalf("round %d: status %d", r, code)
			}
		}
		require.Equal(t, 1, won, "round %d: %v", r, codes)
	}
}

func TestUniqueKeyPolicyChecks(t *testing.T) {
	paths := func(n int) []string {
		var ps []string
		for i := range n {
			ps = append(ps, fmt.Sprintf("/p%d", i))
		}
		return ps
	}
	keys := func(n int) [][]string {
		var ks [][]string
		for i := range n {
			ks = append(ks, []string{fmt.Sprintf("/k%d", i)})
		}
		return ks
	}
	tests := []struct {
		name string
		keys [][]string
		want string // "" for accepted
	}{
		{"16 paths", [][]string{paths(16)}, ""},
		{"17 paths", [][]string{paths(17)}, "17 paths"},
		{"a system property", [][]string{{"/_ts"}}, "system property"},
		{"a system property, nested", [][]string{{"/_etag/x"}}, "system property"},
		{"10 keys", keys(10), ""},
		{"11 keys", keys(11), "11 unique keys"},
		{"no paths", [][]string{{}}, "0 paths"},
		{"no slash", [][]string{{"email"}}, `"email" is invalid`},
		{"wildcard", [][]string{{"/a/*"}}, "wildcards"},
		{"array", [][]string{{"/a/[]/b"}}, "arrays"},
		{"empty name", [][]string{{"/a//b"}}, "empty"},
		{"path twice", [][]string{{"/a", "/a"}}, "twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			_, err := s.CreateContainer(ctx, uniqueProps(lethe.TTLOff, tc.keys...))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, s.ContainerIDs())
		})
	}
}

func TestUniqueKeyPolicyFixed(t *testing.T) {
	s, _ := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	props, err := c.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/email"}}}}, props.UniqueKeyPolicy)

	props.DefaultTimeToLive = lethe.TTLNever // the same policy: a replace goes through
	require.NoError(t, c.Replace(ctx, props))
	for _, up := range []*lethe.UniqueKeyPolicy{nil, {UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/phone"}}}}} {
		p := props
		p.UniqueKeyPolicy = up
		err := c.Replace(ctx, p)
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		require.ErrorContains(t, err, "unique key policy of a container cannot be changed")
	}
	got, err := c.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, props, got)

	// Without a policy, a policy without keys is no change.
	plain := mustContainer(t, s, lethe.ContainerProperties{ID: "plain"})
	pp, err := plain.Read(ctx)
	require.NoError(t, err)
	pp.UniqueKeyPolicy = &lethe.UniqueKeyPolicy{}
	require.NoError(t, plain.Replace(ctx, pp))
}

// The policy is kept with the container's properties, and the index is
// made again at recovery, from the log and from a snapshot.
func TestUniqueKeyDurable(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	o := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	p := lethe.NewPartitionKeyString("p")
	s, err := lethe.Open(o)
	require.NoError(t, err)
	c := uniqueContainer(t, s, lethe.TTLNever, []string{"/email"})
	for _, doc := range []string{`{"id":"a","pk":"p","email":"a"}`, `{"id":"b","pk":"p","email":"b","ttl":5}`} {
		_, err := c.CreateItem(ctx, p, []byte(doc), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	for _, checkpoint := range []bool{false, true} {
		s, err = lethe.Open(o)
		require.NoError(t, err)
		c, err = s.Container("u")
		require.NoError(t, err)
		props, err := c.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"/email"}, props.UniqueKeyPolicy.UniqueKeys[0].Paths)
		_, err = c.CreateItem(ctx, p, []byte(`{"id":"x","pk":"p","email":"a"}`), nil)
		require.Equal(t, 409, status(err), "checkpoint %v", checkpoint)
		if checkpoint {
			require.NoError(t, s.Close())
			break
		}
		require.NoError(t, s.Checkpoint(ctx))
		require.NoError(t, s.Close())
	}
	// b's expiry frees its value after a restart too.
	clock.Advance(5 * time.Second)
	s = openStore(t, o)
	c, err = s.Container("u")
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"y","pk":"p","email":"b"}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"z","pk":"p","email":"a"}`), nil)
	require.Equal(t, 409, status(err))
}

// A second create of the same value that comes while the first is between
// its check and its apply is refused: the check and the write are one step
// (the first claimed its value when it checked it). (The wait for the
// second is bounded only so that a second that gets in is seen whether it
// finishes early or not.)
func TestUniqueKeyCheckAndWriteAtomic(t *testing.T) {
	s, _ := newStore(t)
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	p := lethe.NewPartitionKeyString("p")
	second := make(chan int, 1)
	var first atomic.Bool
	lethe.SetAfterUniqueCheck(c, func() {
		if first.CompareAndSwap(false, true) {
			go func() {
				_, err := c.CreateItem(ctx, p, []byte(`{"id":"b","pk":"p","email":"e"}`), nil)
				second <- status(err)
			}()
			select {
			case code := <-second:
				second <- code // finished while the first was undecided: the lock is broken
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	_, err := c.CreateItem(ctx, p, []byte(`{"id":"a","pk":"p","email":"e"}`), nil)
	require.NoError(t, err)
	require.Equal(t, 409, <-second)
}

// While a durable write to a container with a unique key policy waits for
// its fsync, writes to other shards go on: one of another value decides
// and joins the log (to share the next fsync), and one of the waiting
// write's value, a create or a patch, is refused at once, its value taken.
// Before, every write held the container's unique lock across its wait,
// so they took turns, one fsync each. (The waits are bounded only so that
// a write that is held up fails the test.)
func TestUniqueKeyDurableWaitShared(t *testing.T) {
	s := openStore(t, &lethe.Options{Dir: t.TempDir(), Reaper: lethe.ReaperOptions{Disabled: true}})
	c := uniqueContainer(t, s, lethe.TTLOff, []string{"/email"})
	p, q := lethe.NewPartitionKeyString("p"), lethe.NewPartitionKeyString("q")
	// Each write goes to a shard of its own: a write holds its shard's lock
	// until the log has it.
	used := map[int]bool{lethe.ShardOf(c, p, "a"): true}
	elsewhere := func(pk lethe.PartitionKey, prefix string) string {
		for i := 0; ; i++ {
			if id := fmt.Sprint(prefix, i); !used[lethe.ShardOf(c, pk, id)] {
				used[lethe.ShardOf(c, pk, id)] = true
				return id
			}
		}
	}
	m := elsewhere(p, "m")
	_, err := c.CreateItem(ctx, p, []byte(`{"id":"`+m+`","pk":"p","email":"m"}`), nil)
	require.NoError(t, err)

	syncing, release := make(chan struct{}), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	var first atomic.Bool
	lethe.SetLogSync(s, func(f vfs.File) error {
		if first.CompareAndSwap(false, true) { // a's: the log holds nothing else
			close(syncing)
			<-release
		}
		return f.Sync()
	})
	checked := make(chan struct{}, 4)
	lethe.SetAfterUniqueCheck(c, func() { checked <- struct{}{} })
	bounded := func(what string, ch <-chan int) int {
		t.Helper()
		select {
		case code := <-ch:
			return code
		case <-time.After(10 * time.Second):
			t.Fatalf("%s is held up by a's wait for the log", what)
			return 0
		}
	}
	write := func(f func() error) <-chan int {
		ch := make(chan int, 1)
		go func() { ch <- status(f()) }()
		return ch
	}
	create := func(pk lethe.PartitionKey, doc string) <-chan int {
		return write(func() error { _, err := c.CreateItem(ctx, pk, []byte(doc), nil); return err })
	}

	a := create(p, `{"id":"a","pk":"p","email":"a"}`)
	<-checked
	<-syncing // a waits for its fsync
	other := create(q, `{"id":"`+elsewhere(q, "o")+`","pk":"q","email":"o"}`)
	bounded("the check of a write of another value", write(func() error { <-checked; return nil }))
	require.Equal(t, 409, bounded("a create of a's value", create(p, `{"id":"`+elsewhere(p, "x")+`","pk":"p","email":"a"}`)))
	var take lethe.PatchOperations
	take.AppendSet("/email", "a")
	require.Equal(t, 409, bounded("a patch to a's value", write(func() error { _, err := c.PatchItem(ctx, p, m, take, nil); return err })))
	unblock()
	require.Equal(t, 0, <-a)
	require.Equal(t, 0, <-other)
	require.Zero(t, lethe.UniqueClaims(c), "the writes made hold no claim")
}

// A write refused after its unique key check (here throttled) leaves its
// value free: it claimed it when it checked it, and gives it back.
func TestUniqueKeyClaimReleased(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	props := uniqueProps(lethe.TTLOff, []string{"/email"})
	props.Throughput = 10 // one create of 5.5 RU a second
	c := mustContainer(t, s, props)
	p := lethe.NewPartitionKeyString("p")
	_, err := c.CreateItem(ctx, p, []byte(`{"id":"a","pk":"p","email":"a"}`), nil)
	require.NoError(t, err)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"b","pk":"p","email":"b"}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	clock.Advance(time.Second)
	_, err = c.CreateItem(ctx, p, []byte(`{"id":"c","pk":"p","email":"b"}`), nil)
	require.NoError(t, err, "the throttled write of b still holds its value")
	require.Zero(t, lethe.UniqueClaims(c))
}

// TestUniqueKeyModel runs random writes, expiries and purges on a
// container with a unique key policy and on a model of the rules, and
// compares every outcome: in memory, with a change feed, and durable
// (reopened now and then).
func TestUniqueKeyModel(t *testing.T) {
	for _, variant := range []string{"memory", "feed", "durable"} {
		t.Run(variant, func(t *testing.T) {
			clock := lethe.NewManualClock(t0)
			o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
			props := uniqueProps(lethe.TTLNever, []string{"/email"})
			switch variant {
			case "feed":
				props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: 1 << 20}
			case "durable":
				o.Dir = t.TempDir()
			}
			s, err := lethe.Open(o)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			c := mustContainer(t, s, props)
			uniqueModelRun(t, variant, clock, func() *lethe.Container {
				if variant != "durable" {
					return c
				}
				require.NoError(t, s.Close())
				s, err = lethe.Open(o)
				require.NoError(t, err)
				c, err = s.Container("u")
				require.NoError(t, err)
				return c
			}, c)
		})
	}
}

// uniqueModelItem is an item of TestUniqueKeyModel's model: its email
// ("" for none), its ttl and when it expires (zero: never).
type uniqueModelItem struct {
	email   string
	ttl     int // seconds after each write; 0: none
	expires time.Time
}

func uniqueModelRun(t *testing.T, variant string, clock *lethe.ManualClock, reopen func() *lethe.Container, c *lethe.Container) {
	rng := rand.New(rand.NewPCG(49, uint64(len(variant))))
	ids, pks, emails := []string{"1", "2", "3", "4", "5"}, []string{"p", "q"}, []string{"", "a", "b", "c"}
	model := map[[2]string]uniqueModelItem{}
	live := func(k [2]string) (uniqueModelItem, bool) {
		it, ok := model[k]
		return it, ok && (it.expires.IsZero() || clock.Now().Before(it.expires))
	}
	taken := func(pk, id, email string) bool {
		for k := range model {
			if it, ok := live(k); ok && k[0] == pk && k[1] != id && it.email == email {
				return true
			}
		}
		return false
	}
	for step := range 3000 {
		pk, id, email := pks[rng.IntN(len(pks))], ids[rng.IntN(len(ids))], emails[rng.IntN(len(emails))]
		ttl := rng.IntN(4) // 0: none
		doc := fmt.Sprintf(`{"id":%q,"pk":%q`, id, pk)
		if email != "" {
			doc += fmt.Sprintf(`,"email":%q`, email)
		}
		if ttl > 0 {
			doc += fmt.Sprintf(`,"ttl":%d`, ttl)
		}
		doc += "}"
		next := uniqueModelItem{email: email, ttl: ttl}
		if ttl > 0 {
			next.expires = clock.Now().Add(time.Duration(ttl) * time.Second)
		}
		k := [2]string{pk, id}
		cur, isLive := live(k)
		p := lethe.NewPartitionKeyString(pk)
		var (
			err  error
			want int
			what string
		)
		switch op := rng.IntN(8); op {
		case 0, 1:
			what = "create"
			_, err = c.CreateItem(ctx, p, []byte(doc), nil)
			if isLive || taken(pk, id, email) {
				want = 409
			}
		case 2:
			what = "replace"
			_, err = c.ReplaceItem(ctx, p, id, []byte(doc), nil)
			switch {
			case !isLive:
				want = 404
			case taken(pk, id, email):
				want = 409
			}
		case 3:
			what = "upsert"
			_, err = c.UpsertItem(ctx, p, []byte(doc), nil)
			if taken(pk, id, email) {
				want = 409
			}
		case 4:
			what = "delete"
			_, err = c.DeleteItem(ctx, p, id, nil)
			if !isLive {
				want = 404
			}
			next = uniqueModelItem{}
		case 5:
			what = "patch"
			var ops lethe.PatchOperations
			if email == "" {
				ops.AppendRemove("/email")
			} else {
				ops.AppendSet("/email", email)
			}
			_, err = c.PatchItem(ctx, p, id, ops, nil)
			switch {
			case !isLive:
				want = 404
			case email == "" && cur.email == "":
				want = 400 // nothing to remove
			case taken(pk, id, email):
				want = 409
			}
			next.ttl, next.expires = cur.ttl, time.Time{} // a patch is a write: the item's ttl counts from it
			if cur.ttl > 0 {
				next.expires = clock.Now().Add(time.Duration(cur.ttl) * time.Second)
			}
		case 6:
			what = "time"
			clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			if rng.IntN(4) == 0 {
				what = "purge"
				_, err = c.Purge(ctx)
			}
			if rng.IntN(40) == 0 && variant == "durable" {
				what = "reopen"
				c = reopen()
			}
		case 7:
			what = "batch"
			// Two upserts of the batch's partition: the second may take
			// the first's value, which fails the batch whole.
			id2, email2 := ids[rng.IntN(len(ids))], emails[rng.IntN(len(emails))]
			b := c.NewTransactionalBatch(p)
			b.UpsertItem(modelDoc(id, pk, email), nil)
			b.UpsertItem(modelDoc(id2, pk, email2), nil)
			resp, berr := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, berr)
			// The model: the first upsert, then the second over it.
			ok := !taken(pk, id, email)
			if ok {
				saved, had := model[k]
				model[k] = uniqueModelItem{email: email}
				k2 := [2]string{pk, id2}
				ok = !taken(pk, id2, email2)
				switch {
				case ok:
					model[k2] = uniqueModelItem{email: email2}
				case had:
					model[k] = saved
				default:
					delete(model, k)
				}
			}
			require.Equal(t, ok, resp.Success, "step %d: batch %s %s, %s %s", step, id, email, id2, email2)
			continue
		}
		require.Equal(t, want, status(err), "step %d: %s %s: %v", step, what, doc, err)
		if err == nil && what != "time" && what != "purge" && what != "reopen" {
			if what == "delete" {
				delete(model, k)
			} else {
				model[k] = next
			}
		}
	}
	// Every live item of the model is there, with its value.
	for k := range model {
		it, ok := live(k)
		r, err := c.ReadItem(ctx, lethe.NewPartitionKeyString(k[0]), k[1], nil)
		if !ok {
			require.Equal(t, 404, status(err), "%v", k)
			continue
		}
		require.NoError(t, err)
		var v struct{ Email string }
		require.NoError(t, json.Unmarshal(r.Value, &v))
		require.Equal(t, it.email, v.Email, "%v", k)
	}
}

// modelDoc is the item (pk, id) with email ("" for none).
func modelDoc(id, pk, email string) []byte {
	if email == "" {
		return []byte(fmt.Sprintf(`{"id":%q,"pk":%q}`, id, pk))
	}
	return []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"email":%q}`, id, pk, email))
}
