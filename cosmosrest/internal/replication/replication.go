// Package replication schedules the delivery of a region's changes to the
// other regions of an account: one queue per destination region, in the
// order the changes were sent, each change due when its write instant plus
// the lag from its source to the destination has passed, delivered only
// after the changes ahead of it (so a destination always holds a prefix of
// what was sent to it), and earlier when a staleness bound says the
// destination may not lag that far. It knows nothing of containers or
// HTTP: what a change is and how it is applied are its user's.
package replication

import (
	"sync"
	"time"
)

// Bound is a bounded-staleness limit on how far a destination may lag:
// at most MaxVersions changes undelivered, none written more than MaxAge
// ago. A zero field sets no limit.
type Bound struct {
	MaxVersions int
	MaxAge      time.Duration
}

// LagFunc is the replication lag of one change from region from to region
// to. It is called once for each change sent, under the scheduler's lock,
// so it may draw from a random source of its own.
type LagFunc func(from, to string) time.Duration

// entry is one change waiting in a destination's queue.
type entry[T any] struct {
	written time.Time // the change's instant at its source
	due     time.Time // when it may be delivered without a bound forcing it
	v       T
}

// Scheduler holds the changes sent and not yet delivered. It is safe for
// concurrent use.
type Scheduler[T any] struct {
	lag   LagFunc
	bound Bound

	mu     sync.Mutex
	queues map[string][]entry[T] // by destination, oldest first
}

// New returns a Scheduler of lag lag (nil: none) and staleness bound b.
func New[T any](lag LagFunc, b Bound) *Scheduler[T] {
	if lag == nil {
		lag = func(string, string) time.Duration { return 0 }
	}
	return &Scheduler[T]{lag: lag, bound: b, queues: map[string][]entry[T]{}}
}

// Send queues v, a change written at written in region from, for region
// to.
func (s *Scheduler[T]) Send(from, to string, written time.Time, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := written.Add(max(0, s.lag(from, to)))
	s.queues[to] = append(s.queues[to], entry[T]{written: written, due: due, v: v})
}

// Due removes from to's queue, and returns in order, the changes that are
// due at now or that the staleness bound forces out.
func (s *Scheduler[T]) Due(to string, now time.Time) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[to]
	n := 0
	for n < len(q) && s.forced(q[n], len(q)-n, now) {
		n++
	}
	return s.take(to, n)
}

// forced reports whether e, ahead of waiting changes in its queue (itself
// included), must be delivered at now.
func (s *Scheduler[T]) forced(e entry[T], waiting int, now time.Time) bool {
	switch {
	case !e.due.After(now):
		return true
	case s.bound.MaxVersions > 0 && waiting > s.bound.MaxVersions:
		return true
	case s.bound.MaxAge > 0 && !e.written.Add(s.bound.MaxAge).After(now):
		return true
	}
	return false
}

// All removes everything in to's queue and returns it in order, due or
// not: to catches up with what was sent to it.
func (s *Scheduler[T]) All(to string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take(to, len(s.queues[to]))
}

// take removes and returns the first n changes of to's queue. s.mu is
// held.
func (s *Scheduler[T]) take(to string, n int) []T {
	if n == 0 {
		return nil
	}
	q := s.queues[to]
	out := make([]T, n)
	for i := range out {
		out[i] = q[i].v
	}
	if n == len(q) {
		delete(s.queues, to)
	} else {
		s.queues[to] = append(q[:0:0], q[n:]...)
	}
	return out
}

// Drop removes from every queue the changes drop reports true for: they
// are of something that no longer exists.
func (s *Scheduler[T]) Drop(drop func(T) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for to, q := range s.queues {
		kept := q[:0]
		for _, e := range q {
			if !drop(e.v) {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(s.queues, to)
		} else {
			s.queues[to] = kept
		}
	}
}

// Next returns the earliest instant at which a change becomes due, in any
// queue, and false when nothing waits. A bound's MaxAge can force a change
// out earlier: Next returns that instant when it comes first.
func (s *Scheduler[T]) Next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	found := false
	for _, q := range s.queues {
		t := q[0].due
		if s.bound.MaxAge > 0 {
			if f := q[0].written.Add(s.bound.MaxAge); f.Before(t) {
				t = f
			}
		}
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	return next, found
}

// Pending returns how many changes wait for to, and the write instant of
// the oldest (zero when none does).
func (s *Scheduler[T]) Pending(to string) (int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[to]
	if len(q) == 0 {
		return 0, time.Time{}
	}
	return len(q), q[0].written
}
