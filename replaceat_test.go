package lethe_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expiries returns the expiries c's change feed holds, by id: the instant
// each is reported at (its crts).
func expiries(t *testing.T, c *lethe.Container) map[string]time.Time {
	t.Helper()
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	out := map[string]time.Time{}
	for _, raw := range items {
		var ch change
		require.NoError(t, json.Unmarshal(raw, &ch))
		if ch.Metadata.TimeToLiveExpired {
			out[ch.Metadata.ID] = time.Unix(ch.Metadata.CRTS, 0)
		}
	}
	return out
}

// replaceDefaultAt changes c's DefaultTimeToLive to def at the instant at.
func replaceDefaultAt(t *testing.T, c *lethe.Container, def lethe.TTL, at time.Time) {
	t.Helper()
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.DefaultTimeToLive = def
	require.NoError(t, c.ReplaceAt(ctx, p, at))
}

// TestReplaceAt: a default TTL change made at an earlier instant than the
// store's now expires, and reports, what the change would have at that
// instant: the items the shorter default expires at once are reported at
// it, one whose expiry under the new default falls between it and now at
// that expiry. An instant after now is taken as now, and one before what
// the change feed has reported as the latest it reported.
func TestReplaceAt(t *testing.T) {
	c, clock := feedContainer(t, lethe.ContainerProperties{DefaultTimeToLive: 100})
	upsert(t, c, `{"id":"a"}`) // t0
	clock.Advance(10 * time.Second)
	upsert(t, c, `{"id":"b"}`) // t0+10
	clock.Advance(4 * time.Second)
	upsert(t, c, `{"id":"c"}`) // t0+14: expires at t0+24 under a default of 10
	clock.Advance(11 * time.Second)
	replaceDefaultAt(t, c, 10, t0.Add(22*time.Second)) // now is t0+25
	assert.Equal(t, map[string]time.Time{"a": t0.Add(22 * time.Second), "b": t0.Add(22 * time.Second), "c": t0.Add(24 * time.Second)}, expiries(t, c))

	// The feed has reported up to t0+40, e's expiry (t0+35) among them: a
	// longer default asked for at t0+30 is made at t0+40, and e stays
	// expired.
	upsert(t, c, `{"id":"e"}`) // t0+25
	clock.Advance(15 * time.Second)
	require.Contains(t, expiries(t, c), "e")
	replaceDefaultAt(t, c, 100, t0.Add(30*time.Second))
	_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "e", nil)
	assert.Equal(t, 404, status(err), "an item the feed reported expired is live again")

	// An instant after now is now: an item live at now under the old
	// default is not expired for good by a change asked for an hour later.
	upsert(t, c, `{"id":"f"}`) // t0+40
	clock.Advance(5 * time.Second)
	replaceDefaultAt(t, c, 1000, clock.Now().Add(time.Hour))
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "f", nil)
	assert.NoError(t, err)
	assert.Len(t, expiries(t, c), 4)
}

// TestReplaceAtDurable: a change made at an earlier instant is recovered
// as made: after a restart, the same items are expired, at the same
// instants.
func TestReplaceAtDurable(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	o := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	s, err := lethe.Open(o)
	require.NoError(t, err)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	upsert(t, c, `{"id":"a"}`)
	clock.Advance(14 * time.Second)
	upsert(t, c, `{"id":"c"}`)
	clock.Advance(11 * time.Second)
	replaceDefaultAt(t, c, 10, t0.Add(22*time.Second))
	want := map[string]time.Time{"a": t0.Add(22 * time.Second), "c": t0.Add(24 * time.Second)}
	assert.Equal(t, want, expiries(t, c))
	require.NoError(t, s.Close())

	s = openStore(t, o)
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.Equal(t, want, expiries(t, c))
}

// TestReplaceAtZero: the zero time is refused, and nothing changes.
func TestReplaceAtZero(t *testing.T) {
	c, _ := feedContainer(t, lethe.ContainerProperties{DefaultTimeToLive: 100})
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.DefaultTimeToLive = 10
	err = c.ReplaceAt(ctx, p, time.Time{})
	assert.Equal(t, 400, status(err))
	assert.ErrorContains(t, err, "zero time")
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.TTL(100), got.DefaultTimeToLive)
}
