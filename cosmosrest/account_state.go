package cosmosrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/lethedb/lethe/internal/vfs"
)

// The durable state of an account of one write region: which region is
// the write region, and the session token offset of each of its
// containers (collRepl.offset). A failover writes it in accountFile, in
// AccountConfig.Dir beside the regions' directories (synced, then renamed
// into place), before it is seen; NewAccount reads it back, so that an
// account opened again after a failover keeps its write region and its
// tokens go on from where they were. A Dir without the file has the
// configuration's write region and no offsets, as before it was kept.
//
// An account of several write regions has no write region to keep, and
// each region's tokens are the LSNs of its own feed, which a restart's
// catch-up reads again; what it keeps in accountFile is the session token
// floor of each container deleted, by write region (Account.floors), so
// that a container made again under its name numbers its tokens, in every
// entry of the vector, above the deleted one's, before and after a
// restart.

// accountFile is the file in AccountConfig.Dir that keeps the account's
// state.
const accountFile = "account.json"

// savedAccount is an account's state as accountFile holds it.
type savedAccount struct {
	WriteRegion string        `json:"writeRegion"`
	Offsets     []savedOffset `json:"offsets"`
	// Floors are an account of several write regions' (its write region
	// and offsets are unused).
	Floors []savedFloor `json:"floors,omitempty"`
}

// savedFloor is the session token floor of one container of one write
// region of an account of several.
type savedFloor struct {
	Region string `json:"region"`
	DB     string `json:"db"`
	Coll   string `json:"coll"`
	Floor  uint64 `json:"floor"`
}

// savedOffset is the session token offset of one container of the write
// region.
type savedOffset struct {
	DB     string `json:"db"`
	Coll   string `json:"coll"`
	Offset int64  `json:"offset"`
}

// fs returns the file system of the account's Dir.
func (a *Account) fs() vfs.FS {
	if a.cfg.fs != nil {
		return a.cfg.fs
	}
	return vfs.OS
}

// loadState sets a's write region and its containers' offsets from
// accountFile, when the account has a Dir and one write region, or, with
// several, its floors. A file naming a region the account has not (its
// configuration changed) is ignored (with several write regions, that
// region's floors); a damaged one is an error naming it.
func (a *Account) loadState() error {
	if a.cfg.Dir == "" {
		return nil
	}
	path := filepath.Join(a.cfg.Dir, accountFile)
	b, err := vfs.ReadFile(a.fs(), path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s savedAccount
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("cosmosrest: %s is damaged: %w", path, err)
	}
	if a.multi {
		a.floors = map[srcKey]uint64{}
		for _, f := range s.Floors {
			if n, ok := a.byName[f.Region]; ok {
				a.floors[srcKey{n.idx, collKey{f.DB, f.Coll}}] = f.Floor
			}
		}
		a.seedFloorsLocked(func(collKey) bool { return true }) // not running yet: no lock needed
		return nil
	}
	hub, ok := a.byName[s.WriteRegion]
	if !ok {
		return nil
	}
	a.hub = hub
	for _, o := range s.Offsets {
		a.repl[srcKey{hub.idx, collKey{o.DB, o.Coll}}] = &collRepl{offset: o.Offset}
	}
	return nil
}

// saveState writes accountFile: hub is the write region, offsets its
// containers' offsets. Nothing for an account in memory.
func (a *Account) saveState(hub *regionNode, offsets map[collKey]int64) error {
	if a.cfg.Dir == "" || a.multi {
		return nil
	}
	s := savedAccount{WriteRegion: hub.name, Offsets: []savedOffset{}}
	for k, o := range offsets {
		if o != 0 {
			s.Offsets = append(s.Offsets, savedOffset{DB: k.db, Coll: k.coll, Offset: o})
		}
	}
	sort.Slice(s.Offsets, func(i, j int) bool {
		x, y := s.Offsets[i], s.Offsets[j]
		return x.DB < y.DB || (x.DB == y.DB && x.Coll < y.Coll)
	})
	return a.writeState(s)
}

// writeState writes s to accountFile, synced, then renamed into place.
func (a *Account) writeState(s savedAccount) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(a.fs(), filepath.Join(a.cfg.Dir, accountFile), b)
}

// saveFloorsLocked writes accountFile with the floors of an account of
// several write regions; a.mu is held.
func (a *Account) saveFloorsLocked() error {
	s := savedAccount{WriteRegion: a.hub.name, Offsets: []savedOffset{}}
	for sk, f := range a.floors {
		s.Floors = append(s.Floors, savedFloor{Region: a.regions[sk.src].name, DB: sk.k.db, Coll: sk.k.coll, Floor: f})
	}
	sort.Slice(s.Floors, func(i, j int) bool {
		x, y := s.Floors[i], s.Floors[j]
		return x.DB < y.DB || x.DB == y.DB && (x.Coll < y.Coll || x.Coll == y.Coll && x.Region < y.Region)
	})
	return a.writeState(s)
}

// keepFloorsLocked notes, for each container drop reports true for (it is
// being forgotten, deleted), the highest session token any region
// reached, so that a container made again of the same name, which has the
// same resource id (the SDKs' session containers keep their tokens by
// it), numbers its tokens above every token of the one deleted: its
// reading's offset is the floor (replOf). With Dir the floors are saved
// as those offsets (with several write regions, as floors). a.mu is held.
func (a *Account) keepFloorsLocked(drop func(collKey) bool) {
	if a.floors == nil {
		a.floors = map[srcKey]uint64{}
	}
	for _, n := range a.regions {
		for sk, p := range n.progress {
			if drop(sk.k) {
				a.floors[sk] = max(a.floors[sk], p)
			}
		}
	}
	if a.cfg.Dir == "" {
		return
	}
	if a.multi {
		if err := a.saveFloorsLocked(); err != nil {
			a.hub.h.cfg.Logger.Error("cosmosrest: saving the session token floors of deleted containers", "err", err)
		}
		return
	}
	offsets := map[collKey]int64{}
	for sk, cr := range a.repl {
		if sk.src == a.hub.idx {
			offsets[sk.k] = cr.offset
		}
	}
	for sk, f := range a.floors {
		// The containers dropped now, and those dropped before and not
		// made again (they have no reading to give an offset): every floor
		// is kept, as Failover keeps them.
		if _, ok := offsets[sk.k]; drop(sk.k) || !ok {
			offsets[sk.k] = int64(f)
		}
	}
	if err := a.saveState(a.hub, offsets); err != nil {
		a.hub.h.cfg.Logger.Error("cosmosrest: saving the session token floors of deleted containers", "err", err)
	}
}
