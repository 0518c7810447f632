package cosmosrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/epk"
)

// splitPath is the path of the split endpoint (serveSplit).
const splitPath = "/_lethe/split"

// ErrRangeNotSplittable is wrapped by the error of a split of a range too
// narrow to divide.
var ErrRangeNotSplittable = errors.New("cosmosrest: the partition key range is too narrow to split")

// SplitPartitionKeyRange splits the partition key range rangeID of the
// container coll of the database db in two, as the service splits a range
// that has grown: the two children, with the container's next unused
// ids, divide the range's effective partition keys at the middle of its
// share of the hash space (epk.Mid; a version 1 container's halves may
// hold its keys unevenly) and name it, after its own parents, as their
// parent. From then on /pkranges lists the children in its place (its
// etag changes), and a request naming the range gets 410 with substatus
// 1002 (PartitionKeyRangeGone): the SDKs read the ranges again and go on
// with the children, with the continuations they had, which resume
// there, since a continuation is a position in the container's items or
// change feed whatever the range. Ranges are metadata: no item moves,
// and no request waits for a split. With Config.Dir the new layout is
// written to the database's directory before it is seen (rangesfile.go),
// so that it survives a restart; a write that fails fails the split, and
// nothing changes. It returns the children's ids. A missing database,
// container or range wraps lethe.ErrNotFound; a range too narrow to
// divide, ErrRangeNotSplittable.
func (h *Handler) SplitPartitionKeyRange(db, coll, rangeID string) ([]string, error) {
	d, ok := h.lookup(db)
	if !ok {
		if h.isClosed() {
			return nil, fmt.Errorf("cosmosrest: the handler is closed: %w", lethe.ErrClosed)
		}
		return nil, fmt.Errorf("cosmosrest: no database %q: %w", db, lethe.ErrNotFound)
	}
	c, err := d.store.Container(coll)
	if err != nil {
		return nil, fmt.Errorf("cosmosrest: no container %q in the database %q: %w", coll, db, err)
	}
	p, err := c.Read(context.Background())
	if err != nil {
		return nil, err
	}
	var children []string
	err = d.changeLayout(coll, p, h.cfg.Ranges, func(old *rangeLayout) (*rangeLayout, error) {
		next, ids, err := old.split(rangeID)
		children = ids
		return next, err
	})
	if err != nil {
		return nil, fmt.Errorf("cosmosrest: splitting the partition key range %q of %q/%q: %w", rangeID, db, coll, err)
	}
	return children, nil
}

// split returns l with its range id replaced by two children, and their
// ids.
func (l *rangeLayout) split(id string) (*rangeLayout, []string, error) {
	i := slices.IndexFunc(l.ranges, func(r pkRange) bool { return r.id == id })
	if i < 0 {
		return nil, nil, fmt.Errorf("the container has no such range: %w", lethe.ErrNotFound)
	}
	r := l.ranges[i]
	mid, ok := epk.Mid(l.version, l.multi, r.lo, r.hi)
	if !ok {
		return nil, nil, ErrRangeNotSplittable
	}
	parents := append(slices.Clone(r.parents), r.id)
	a, b := strconv.Itoa(l.next), strconv.Itoa(l.next+1)
	next := *l
	next.lsn++
	next.next += 2
	next.ranges = slices.Concat(l.ranges[:i], []pkRange{
		{id: a, num: l.next, lo: r.lo, hi: mid, parents: parents, header: []string{a}},
		{id: b, num: l.next + 1, lo: mid, hi: r.hi, parents: slices.Clone(parents), header: []string{b}},
	}, l.ranges[i+1:])
	return &next, []string{a, b}, nil
}

// grow returns l with ranges split until it has n, or until none can be:
// each time the widest, whose lineage is shortest (the first in the order
// of the space among those), so that the ranges stay as even as splits can
// make them.
func (l *rangeLayout) grow(n int) *rangeLayout {
	for len(l.ranges) < n {
		widest := 0
		for i, r := range l.ranges {
			if len(r.parents) < len(l.ranges[widest].parents) {
				widest = i
			}
		}
		next, _, err := l.split(l.ranges[widest].id)
		if err != nil {
			return l // too narrow to divide again
		}
		l = next
	}
	return l
}

// splitRequest is the body of a request to the split endpoint.
type splitRequest struct {
	Database  string `json:"database"`
	Container string `json:"container"`
	Range     string `json:"range"`
}

// serveSplit serves the split endpoint, POST /_lethe/split, signed with the
// master key for the resource type "split" and the resource link "", with
// the body {"database", "container", "range"}: it splits the range
// (SplitPartitionKeyRange) and answers 200 with {"children": [ids]}; 404
// for a database, container or range that does not exist, 400 for a range
// too narrow to split or a body that is not such an object, 500 for a
// layout that could not be written.
func (h *Handler) serveSplit(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	body, ok := h.postControl(w, r, deadline, splitPath, "split", "a split")
	if !ok {
		return
	}
	var req splitRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Database == "" || req.Container == "" || req.Range == "" {
		apiError{status: http.StatusBadRequest, msg: `the body must be {"database": "...", "container": "...", "range": "<partition key range id>"}`}.write(w)
		return
	}
	children, err := h.SplitPartitionKeyRange(req.Database, req.Container, req.Range)
	switch {
	case errors.Is(err, lethe.ErrClosed):
		apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, msgShuttingDown)}.write(w)
	case errors.Is(err, lethe.ErrNotFound):
		apiError{status: http.StatusNotFound, msg: err.Error()}.write(w)
	case errors.Is(err, ErrRangeNotSplittable):
		apiError{status: http.StatusBadRequest, msg: err.Error()}.write(w)
	case err != nil:
		h.logFailure(r, http.StatusInternalServerError, err)
		apiError{status: http.StatusInternalServerError, msg: withDetail(msgInternal, err.Error())}.write(w)
	default:
		writeControlJSON(w, http.StatusOK, map[string][]string{"children": children})
	}
}
