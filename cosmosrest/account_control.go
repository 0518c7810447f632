package cosmosrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// regionsPath is the path of an account's regions control endpoint
// (serveRegions), served by every region.
const regionsPath = "/_lethe/regions"

// RegionStatus is the state of one region of an Account.
type RegionStatus struct {
	Name string `json:"name"`
	// Write is set on the write region.
	Write bool `json:"write"`
	// Down is how the region fails its requests, "" when it is up.
	Down RegionDownMode `json:"down,omitempty"`
	// Pending counts the changes sent to the region and not yet applied.
	Pending int `json:"pending"`
	// LagMS is how long ago, by the account's clock, the oldest of them
	// was written, in milliseconds: the region's replication lag.
	LagMS int64 `json:"lagMs"`
	// Conflicts counts the replicated changes that conflicted with the
	// region's version of their item (several write regions).
	Conflicts int64 `json:"conflicts"`
}

// Status returns the state of every region, in their order.
func (a *Account) Status() []RegionStatus {
	now := a.now()
	out := make([]RegionStatus, len(a.regions))
	for i, n := range a.regions {
		pending, oldest := a.sched.Pending(n.name)
		a.mu.Lock()
		down := n.down
		a.mu.Unlock()
		out[i] = RegionStatus{Name: n.name, Write: n.acceptsWrites(), Down: down, Pending: pending, Conflicts: n.conflicts.Load()}
		if pending > 0 {
			out[i].LagMS = max(0, now.Sub(oldest).Milliseconds())
		}
	}
	return out
}

// RegionDown returns how region name fails its requests: "" when it is
// up (or the account has no such region).
func (a *Account) RegionDown(name string) RegionDownMode {
	n, ok := a.byName[name]
	if !ok {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return n.down
}

// TakeRegionDown takes region name down: from then on it fails every
// request as mode says (the regions' control endpoint excepted), and
// receives no replicated change until it comes up. Changes made in the
// write region meanwhile wait for it. An unknown region or mode is an
// error wrapping ErrRegion.
func (a *Account) TakeRegionDown(name string, mode RegionDownMode) error {
	n, err := a.knownRegion(name)
	if err != nil {
		return err
	}
	switch mode {
	case RegionRefuse, RegionUnavailable, RegionTimeout:
	default:
		return fmt.Errorf("%w: %q is not a way for a region to be down (%s, %s or %s)", ErrRegion, mode, RegionRefuse, RegionUnavailable, RegionTimeout)
	}
	a.mu.Lock()
	if n.up == nil {
		n.up = make(chan struct{})
	}
	n.down = mode
	a.mu.Unlock()
	if f := a.cfg.RegionChanged; f != nil {
		f(name, mode)
	}
	return nil
}

// BringRegionUp brings region name up: it serves requests again, requests
// held by RegionTimeout among them, and receives what waited for it as it
// becomes due. An unknown region is an error wrapping ErrRegion.
func (a *Account) BringRegionUp(name string) error {
	n, err := a.knownRegion(name)
	if err != nil {
		return err
	}
	a.mu.Lock()
	n.down = ""
	if n.up != nil {
		close(n.up)
		n.up = nil
	}
	a.mu.Unlock()
	if f := a.cfg.RegionChanged; f != nil {
		f(name, "")
	}
	a.deliverDue(n)
	return nil
}

// ReleaseHeld answers 503 every request held by a region down in
// RegionTimeout, and makes such a region fail its requests so from then
// on (as RegionUnavailable), so that a graceful stop
// (http.Server.Shutdown, which waits for the requests being served)
// waits for none. BringRegionUp brings it up as before.
func (a *Account) ReleaseHeld() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range a.regions {
		if n.down == RegionTimeout {
			n.down = RegionUnavailable
			close(n.up) // a held request looks again, and finds it unavailable
			n.up = make(chan struct{})
		}
	}
}

// Failover makes region name the write region, as a manual failover of
// the service does: once every write under way has been answered, the new
// write region receives everything the old one committed (so no
// acknowledged write is lost), its session tokens go on from the old
// one's, the account resource names it as the write region, and the old
// one answers writes 403 with substatus 3 (WriteForbidden). An unknown
// region, or one that is down, is an error wrapping ErrRegion.
func (a *Account) Failover(name string) error {
	n, err := a.knownRegion(name)
	if err != nil {
		return err
	}
	if a.multi {
		return fmt.Errorf("%w: an account of several write regions has no one write region to move", ErrRegion)
	}
	if !n.isUp() {
		return fmt.Errorf("%w: the region %q is down: it cannot become the write region", ErrRegion, name)
	}
	a.topo.Lock()
	defer a.topo.Unlock()
	old := a.hubNode()
	if old == n {
		return nil
	}
	a.collectAll(old)
	a.catchUp(n)

	// The new write region's reading of each container starts at its
	// feed's end, with the offset that makes its tokens go on from the old
	// one's; with Dir, both are saved before they are seen.
	type start struct {
		cursor uint64
		offset int64
	}
	starts := map[collKey]start{}
	offsets := map[collKey]int64{}
	for _, d := range n.h.databases() {
		for _, id := range d.store.ContainerIDs() {
			k := collKey{d.id, id}
			c, ok := n.storeContainer(k)
			if !ok {
				continue
			}
			last := latestLSN(c)
			a.mu.Lock()
			s := start{last, int64(n.progress[srcKey{0, k}]) - int64(last)}
			a.mu.Unlock()
			starts[k], offsets[k] = s, s.offset
		}
	}
	a.mu.Lock()
	for sk, f := range a.floors { // a container deleted: one made again starts above it
		if _, ok := offsets[sk.k]; !ok {
			offsets[sk.k] = int64(f)
		}
	}
	a.mu.Unlock()
	if err := a.saveState(n, offsets); err != nil {
		return fmt.Errorf("cosmosrest: saving the write region %q: %w", name, err)
	}
	for k, s := range starts {
		cr := a.replOf(srcKey{n.idx, k})
		cr.mu.Lock()
		cr.cursor, cr.offset = s.cursor, s.offset
		cr.mu.Unlock()
	}
	a.mu.Lock()
	a.hub = n
	a.mu.Unlock()
	return nil
}

// SplitPartitionKeyRange splits a partition key range of container coll
// of database db in every region, as Handler.SplitPartitionKeyRange splits
// it in one (ranges are metadata, the same in every region), and returns
// the children's ids. Its errors are Handler.SplitPartitionKeyRange's in
// the first region, which change nothing; a later region failing a split
// the first made is split in the others still, and the error names it:
// the regions' ranges then differ.
func (a *Account) SplitPartitionKeyRange(db, coll, rangeID string) ([]string, error) {
	a.meta.Lock()
	defer a.meta.Unlock()
	children, err := a.regions[0].h.SplitPartitionKeyRange(db, coll, rangeID)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, n := range a.regions[1:] {
		if _, err := n.h.SplitPartitionKeyRange(db, coll, rangeID); err != nil {
			errs = append(errs, fmt.Errorf("cosmosrest: the region %q failed the split %q made: %w", n.name, a.regions[0].name, err))
		}
	}
	return children, errors.Join(errs...)
}

// regionsAnswer is the body of the regions control endpoint's answers.
type regionsAnswer struct {
	WriteRegion string         `json:"writeRegion"`
	Consistency string         `json:"consistency"`
	Regions     []RegionStatus `json:"regions"`
}

// serveRegions serves the regions control endpoint, signed with the
// master key for the resource type "regions" and the resource link "" (or
// the region's name, for a request about one region):
//
//	GET  /_lethe/regions                  the regions' state
//	POST /_lethe/regions/{name}/down      {"mode":"refuse"|"unavailable"|"timeout"}
//	POST /_lethe/regions/{name}/up
//	POST /_lethe/regions/{name}/failover  make it the write region
//
// Each answers 200 with the regions' state (regionsAnswer).
func (a *Account) serveRegions(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	h := a.regions[0].h
	rest := strings.TrimPrefix(r.URL.EscapedPath(), regionsPath)
	name, action := "", ""
	if rest != "" && rest != "/" {
		parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
		if len(parts) != 2 {
			refuseNoControl(w, r, deadline)
			return
		}
		var err error
		if name, err = url.PathUnescape(parts[0]); err != nil {
			refuse(w, r, deadline, false, http.StatusBadRequest, "the region's name is not a valid path segment")
			return
		}
		action = parts[1]
	}
	body, ok := h.controlRequest(w, r, deadline, "regions", name, "regions are controlled with the master key; a resource token cannot")
	if !ok {
		return
	}
	var err error
	switch {
	case r.Method == http.MethodGet && name == "":
	case r.Method != http.MethodPost || name == "":
		w.Header().Set("Allow", "GET, POST")
		apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s is not served on %s", r.Method, clip(r.URL.Path))}.write(w)
		return
	case action == "down":
		var in struct {
			Mode RegionDownMode `json:"mode"`
		}
		if len(body) > 0 {
			if e := json.Unmarshal(body, &in); e != nil {
				apiError{status: http.StatusBadRequest, msg: "the body is not valid JSON: " + e.Error()}.write(w)
				return
			}
		}
		if in.Mode == "" {
			in.Mode = RegionRefuse
		}
		err = a.TakeRegionDown(name, in.Mode)
	case action == "up":
		err = a.BringRegionUp(name)
	case action == "failover":
		err = a.Failover(name)
	default:
		apiError{status: http.StatusNotFound, msg: "no such control resource: " + clip(r.URL.Path)}.write(w)
		return
	}
	if err != nil {
		apiError{status: http.StatusBadRequest, msg: strings.TrimPrefix(err.Error(), "cosmosrest: ")}.write(w)
		return
	}
	writeControlJSON(w, http.StatusOK, regionsAnswer{WriteRegion: a.WriteRegion(), Consistency: a.level, Regions: a.Status()})
}

// locations returns the account resource's writable and readable
// locations as region n answers request r (scheme "http" or "https"): the
// write region, and every region, the write region first.
func (a *Account) locations(r *http.Request, scheme string) (writable, readable []location) {
	hub := a.hubNode()
	loc := func(n *regionNode) location {
		return location{Name: n.name, Endpoint: n.advertised(r, scheme)}
	}
	if a.multi {
		for _, n := range a.regions {
			if n.writable {
				writable = append(writable, loc(n))
			}
			readable = append(readable, loc(n))
		}
		return writable, readable
	}
	writable = []location{loc(hub)}
	readable = []location{loc(hub)}
	for _, n := range a.regions {
		if n != hub {
			readable = append(readable, loc(n))
		}
	}
	return writable, readable
}

// advertised is region n's endpoint as the account resource names it to
// request r.
func (n *regionNode) advertised(r *http.Request, scheme string) string {
	switch {
	case n.endpoint == "":
		return scheme + "://" + advertisedHost(r) + "/"
	case strings.HasPrefix(n.endpoint, ":"):
		host := advertisedHost(r)
		if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
			host = host[:i]
		}
		return scheme + "://" + host + n.endpoint + "/"
	}
	return n.endpoint
}
