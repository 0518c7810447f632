package lethetest

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// StoredItem is an item as the account stores it.
type StoredItem struct {
	// JSON is the stored document, with its system properties (_ts,
	// _etag, ...), as a read through the front returns it.
	JSON []byte
	// TS is the item's last write, its _ts, by the account's clock.
	TS time.Time
	// Expires reports whether the item expires; ExpiresAt is then when,
	// and TimeLeft how long from the account's now.
	Expires   bool
	ExpiresAt time.Time
	TimeLeft  time.Duration
	// TTLIgnored reports whether the item's own positive ttl is ignored
	// because its container's time to live is off (DefaultTimeToLive
	// absent): then no item expires, whatever its own ttl says, and Expires
	// is false. The ttl is kept as written and counts once time to live is
	// turned on. It is the trap of an item written with "ttl": 60 that is
	// still there after FastForward(61 * time.Second).
	TTLIgnored bool
}

// container returns the lethe container behind db/coll in the front h,
// failing the test if there is none.
func (a *Account) container(h *cosmosrest.Handler, db, coll string) *lethe.Container {
	a.t.Helper()
	s, ok := h.Store(db)
	if !ok {
		a.t.Fatalf("lethetest: no database %q", db)
	}
	c, err := s.Container(coll)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	return c
}

// Item returns item id of partition key pk (such as
// lethe.NewPartitionKeyString("a")) in container coll of database db, as
// stored, with when it expires, or whether its own ttl is ignored; false
// if there is no such live item. It charges no request units and passes
// no fault rule. In an account of Regions, it looks in the first region
// (ItemIn looks in any).
func (a *Account) Item(db, coll string, pk lethe.PartitionKey, id string) (StoredItem, bool) {
	a.t.Helper()
	return a.item(a.h, db, coll, pk, id)
}

// ItemIn is Item in region's replica, as the account's regions
// (Options.Regions) hold it: a region the item has not reached yet has
// no such item.
func (a *Account) ItemIn(region, db, coll string, pk lethe.PartitionKey, id string) (StoredItem, bool) {
	a.t.Helper()
	return a.item(a.RegionHandler(region), db, coll, pk, id)
}

// item is Item in the front h.
func (a *Account) item(h *cosmosrest.Handler, db, coll string, pk lethe.PartitionKey, id string) (StoredItem, bool) {
	a.t.Helper()
	c := a.container(h, db, coll)
	ctx := context.Background()
	at, expires, err := c.ItemExpiry(ctx, pk, id)
	if errors.Is(err, lethe.ErrNotFound) {
		return StoredItem{}, false
	}
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	r, err := c.ReadItem(ctx, pk, id, nil)
	if errors.Is(err, lethe.ErrNotFound) {
		return StoredItem{}, false
	}
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	var sys struct {
		TS  int64    `json:"_ts"`
		TTL *float64 `json:"ttl"` // validated on write: absent, null, -1 or a positive integer
	}
	if err := json.Unmarshal(r.Value, &sys); err != nil {
		a.t.Fatalf("lethetest: the stored item is not JSON: %v", err)
	}
	props, err := c.Read(ctx)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	it := StoredItem{JSON: r.Value, TS: time.Unix(sys.TS, 0), Expires: expires,
		TTLIgnored: props.DefaultTimeToLive == lethe.TTLOff && sys.TTL != nil && *sys.TTL > 0}
	if expires {
		it.ExpiresAt = at
		it.TimeLeft = at.Sub(a.clock.Now())
	}
	return it, true
}

// ExpiredItem is an item whose time to live ran out.
type ExpiredItem struct {
	ID string
	// PartitionKey is the item's partition key, as the change feed's
	// metadata names it: {"/path's last segment": value, ...}.
	PartitionKey map[string]any
	// ExpiredAt is when it expired, to the second (the change's crts).
	ExpiredAt time.Time
	// Item is the version that expired.
	Item json.RawMessage
}

// Expired returns the items of container coll of database db that
// expired, oldest first, as its change feed (all versions and deletes)
// records them. The container must keep a change feed, as every container
// the front creates does by default. In an account of Regions, it looks in
// the first region (ExpiredIn looks in any).
func (a *Account) Expired(db, coll string) []ExpiredItem {
	a.t.Helper()
	return a.expired(a.h, db, coll)
}

// ExpiredIn is Expired in region's replica: the items that expired there,
// as its own change feed records them (each region's feed reports an
// expiry at its instant, which is the same in every region).
func (a *Account) ExpiredIn(region, db, coll string) []ExpiredItem {
	a.t.Helper()
	return a.expired(a.RegionHandler(region), db, coll)
}

// expired is Expired in the front h.
func (a *Account) expired(h *cosmosrest.Handler, db, coll string) []ExpiredItem {
	a.t.Helper()
	c := a.container(h, db, coll)
	ctx := context.Background()
	p := c.NewChangeFeedPager(&lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	var out []ExpiredItem
	for {
		page, err := p.NextPage(ctx)
		if err != nil {
			a.t.Fatalf("lethetest: reading the change feed of %s/%s: %v", db, coll, err)
		}
		if len(page.Items) == 0 {
			return out
		}
		for _, raw := range page.Items {
			var ch struct {
				Previous json.RawMessage `json:"previous"`
				Metadata struct {
					Expired      bool           `json:"timeToLiveExpired"`
					ID           string         `json:"id"`
					PartitionKey map[string]any `json:"partitionKey"`
					CRTS         int64          `json:"crts"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &ch); err != nil {
				a.t.Fatalf("lethetest: a change is not JSON: %v", err)
			}
			if m := ch.Metadata; m.Expired {
				out = append(out, ExpiredItem{ID: m.ID, PartitionKey: m.PartitionKey, ExpiredAt: time.Unix(m.CRTS, 0), Item: ch.Previous})
			}
		}
	}
}
