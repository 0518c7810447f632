package lethe

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lethedb/lethe/internal/manifest"
)

// A Store is an in-process document store of containers whose items expire.
// Its methods are safe for concurrent use. Close it to stop its reaper.
type Store struct {
	clock  storeClock
	reaper *reaper // nil when disabled
	opts   Options
	closed atomic.Bool
	// users is set by every user operation on a container (Container.check)
	// and cleared by the reaper, which paces its purge only when it finds
	// it set: someone was served and could be slowed. Users only load it
	// while it is set, so it costs them no cache-line traffic; it shares
	// closed's cache line, which they load anyway (not seq's, which every
	// write changes).
	users     atomic.Bool
	closeOnce sync.Once
	// seq is the write sequence: every write's ETag and index order. Every
	// write adds to it, so it has a cache line of its own: the fields every
	// operation loads (closed, users, shared) do not move between cores
	// with it.
	_   [64]byte
	seq atomic.Uint64
	_   [64]byte

	// shared is the store's shared throughput (ru.go); nil: none.
	// sharedMu orders its replacements, and orders them against the
	// creates and replaces of containers with vector indexes, which a store
	// with shared throughput may not have: each side holds it across its
	// check of the other and its change. It is taken before mu and before
	// any container's locks.
	shared   atomic.Pointer[budget]
	sharedMu sync.Mutex

	mu         sync.RWMutex          // guards containers and list
	containers map[string]*Container // by id
	list       []*Container          // the same, sorted by id; replaced, never changed, on every create or delete

	// A durable store (Options.Dir): its directory's lock, its log, its
	// checkpointer and what its recovery found. All nil in memory.
	dirLock      io.Closer
	wal          *wal
	checkpointer *checkpointer
	recovery     RecoveryInfo
	storeID      storeID           // the directory's id (manifest.go)
	manifest     manifest.Manifest // the directory's MANIFEST as last written

	// The expiry notifier (expiryevents.go), started by the first
	// subscription; notifierMu orders its start against Close.
	notifier     atomic.Pointer[notifier]
	notifierOnce sync.Once
	notifierMu   sync.Mutex

	// The background work of the containers (vector index builds), which
	// Close stops (closing bgStop) and waits for (bg); bgMu orders their
	// starts against Close.
	bgMu     sync.Mutex
	bgStop   chan struct{}
	bgClosed bool
	bg       sync.WaitGroup

	hooks atomic.Pointer[testHooks] // nil but in the package's tests (testhooks.go)
}

// Open opens a store. A nil opts means the defaults: in memory, the system
// clock, the default reaper. Open copies opts, validates them and fills in
// the defaults of zero values; an invalid option is an *OptionError and
// starts nothing.
//
// With Options.Dir, the store is durable: Open creates the directory if it
// does not exist, takes it for itself (another open store, in this process
// or another, makes Open fail with ErrLocked and touches nothing), and
// recovers what it holds (see Store.Recovery): the newest snapshot, then
// the log after it. Items that have expired by the store's clock are not
// brought back. Damage to the files other than a torn end of the log makes
// Open fail with a *CorruptionError naming the file and offset.
func Open(opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		clock:      newStoreClock(o.Clock),
		opts:       o,
		containers: make(map[string]*Container),
	}
	replaceBudget(&s.shared, o.Throughput, o.AutoscaleMaxThroughput, s.clock.now())
	if o.Dir != "" {
		if err := s.openDir(); err != nil {
			return nil, err
		}
		for _, c := range s.containerList() {
			c.startVectorBuilds()
		}
	}
	if !o.Reaper.Disabled {
		s.reaper = newReaper(s)
		if mc, ok := o.Clock.(*ManualClock); ok {
			mc.watch(s.reaper.wake)
		}
		go s.reaper.run()
	}
	return s, nil
}

// Close stops the reaper and waits for it to stop; a durable store also
// stops its checkpointer, writes and syncs its log and lets go of its
// directory. After Close every call on the store or its containers fails
// with ErrClosed. Close is idempotent: a second call returns nil, once the
// first has finished.
func (s *Store) Close() error {
	s.closed.Store(true)
	var err error
	s.closeOnce.Do(func() {
		if r := s.reaper; r != nil {
			if mc, ok := s.opts.Clock.(*ManualClock); ok {
				mc.unwatch(r.wake)
			}
			close(r.stop)
			<-r.done
		}
		s.stopNotifier()
		s.stopBackground()
		for _, c := range s.containerList() {
			c.subs.closeAll()
		}
		if s.wal != nil {
			s.checkpointer.close()
			err = s.wal.close()
			if err == nil && !s.wal.readOnly() {
				// Every byte of the log is synced: the manifest seals the
				// last segment, so that a reopen finds it whole.
				err = s.sealManifest()
			}
			if uerr := s.dirLock.Close(); err == nil {
				err = uerr
			}
		}
	})
	if r := s.reaper; r != nil {
		<-r.done
	}
	return err
}

// goBackground runs fn in a goroutine of its own, which Close stops (by
// closing stop) and waits for; it reports false, starting nothing, when
// the store is closed.
func (s *Store) goBackground(fn func(stop <-chan struct{})) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	if s.bgStop == nil {
		s.bgStop = make(chan struct{})
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn(s.bgStop)
	}()
	return true
}

// stopBackground stops the goroutines goBackground started and waits for
// them.
func (s *Store) stopBackground() {
	s.bgMu.Lock()
	s.bgClosed = true
	if s.bgStop != nil {
		close(s.bgStop)
	}
	s.bgMu.Unlock()
	s.bg.Wait()
}

// CreateContainer creates a container. It fails with ErrConflict if the id
// is taken and with ErrBadRequest if props are invalid.
func (s *Store) CreateContainer(ctx context.Context, props ContainerProperties) (*Container, error) {
	const op = "CreateContainer"
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	props, pp, err := normalizeProps(props)
	if err != nil {
		return nil, withContext(err, op, props.ID, "")
	}
	if hasVectorIndexes(props) {
		s.sharedMu.Lock()
		defer s.sharedMu.Unlock()
	}
	if err := vectorIndexesOnShared(s, props); err != nil {
		return nil, withContext(err, op, props.ID, "")
	}
	s.mu.Lock()
	if _, ok := s.containers[props.ID]; ok {
		s.mu.Unlock()
		return nil, withContext(&Error{StatusCode: statusConflict, Message: msgConflict}, op, props.ID, "")
	}
	now, seq := s.clock.now(), s.nextSeq()
	if s.wal != nil {
		// The store lock is held until the log holds the creation
		// durably: no one sees a container that a crash can take back.
		ticket, lerr := s.wal.addContainer(frameContainer, seq, now, propsJSON(props))
		if lerr == nil {
			lerr = s.wal.wait(ticket)
		}
		if lerr != nil {
			s.mu.Unlock()
			return nil, storageError(lerr, op, props.ID, "")
		}
	}
	c := newContainer(s, props, pp, now)
	c.created = seq
	s.containers[props.ID] = c
	s.relistLocked()
	s.mu.Unlock()
	c.startVectorBuilds()
	return c, nil
}

// Throughput returns the store's shared throughput: manual (throughput) or
// autoscale (autoscaleMax), or neither (both 0), as Options or the last
// ReplaceThroughput set it.
func (s *Store) Throughput() (throughput, autoscaleMax int32) {
	return s.shared.Load().setting()
}

// SharedThroughput reports whether the store has shared throughput, which
// the containers without throughput of their own draw on. (Cosmos DB
// refuses some container features in a database with shared throughput.)
func (s *Store) SharedThroughput() bool { return s.shared.Load() != nil }

// ScaledThroughput returns the request units per second the store's shared
// throughput provides now: a manual throughput's, or the figure an
// autoscale throughput has scaled to (see Container.ScaledThroughput); 0
// without shared throughput.
func (s *Store) ScaledThroughput() int32 {
	b := s.shared.Load()
	if b == nil {
		return 0
	}
	return b.scaled(s.clock.now())
}

// ReplaceThroughput changes the store's shared throughput, at once, to a
// manual throughput or an autoscale maximum (never both; both 0 removes
// it: the containers without their own become unlimited). A changed budget
// starts full. It fails with ErrBadRequest, changing nothing, for a
// negative value or both set. A durable store does not keep it (see
// Options.Throughput).
func (s *Store) ReplaceThroughput(ctx context.Context, throughput, autoscaleMax int32) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if problem := throughputProblem(throughput, autoscaleMax); problem != "" {
		return withContext(badRequest("%s", problem), "ReplaceThroughput", "", "")
	}
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	if throughput != 0 || autoscaleMax != 0 {
		for _, c := range s.containerList() {
			if p, err := c.Read(ctx); err == nil && hasVectorIndexes(p) {
				return withContext(badRequest("the container %q has vector indexes, which Cosmos DB does not support in a database with shared throughput", c.ID()), "ReplaceThroughput", "", "")
			}
		}
	}
	replaceBudget(&s.shared, throughput, autoscaleMax, s.clock.now())
	return nil
}

// Container returns the container id, or ErrNotFound.
func (s *Store) Container(id string) (*Container, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	c := s.containers[id]
	s.mu.RUnlock()
	if c == nil {
		return nil, withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, "Container", id, "")
	}
	return c, nil
}

// DeleteContainer deletes the container id and all its items. Handles to
// it fail with ErrNotFound afterwards.
func (s *Store) DeleteContainer(ctx context.Context, id string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	const op = "DeleteContainer"
	// The store lock is held until the deletion is logged, so that a
	// container created again with the same id is logged after it.
	s.mu.Lock()
	c := s.containers[id]
	if c == nil {
		s.mu.Unlock()
		return withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, id, "")
	}
	c.lockAll()
	m := mutation{cause: causeDrop, now: s.clock.now()}
	_, err := c.apply(&m)
	c.unlockAll()
	if err == nil {
		delete(s.containers, id)
		s.relistLocked()
	}
	s.mu.Unlock()
	if err != nil {
		return storageError(err, op, id, "")
	}
	c.subs.closeAll()
	if s.wal != nil {
		// Its items stay in the log until the next snapshot: take one soon.
		s.checkpointer.kick()
	}
	return nil
}

// ContainerIDs returns the ids of the store's containers, sorted. It
// returns nil after Close.
func (s *Store) ContainerIDs() []string {
	if s.closed.Load() {
		return nil
	}
	list := s.containerList()
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.id)
	}
	return ids
}

// containerList returns the containers, sorted by id. The slice is shared:
// do not change it.
func (s *Store) containerList() []*Container {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.list
}

// relistLocked rebuilds list from containers; s.mu must be held.
func (s *Store) relistLocked() {
	list := make([]*Container, 0, len(s.containers))
	for _, c := range s.containers {
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b *Container) int { return strings.Compare(a.id, b.id) })
	s.list = list
}

// check fails when the store is unusable or ctx (which may be nil) is done.
func (s *Store) check(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if ctx != nil {
		return ctx.Err()
	}
	return nil
}

// usable fails when the store is closed or was not made by Open.
func (s *Store) usable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.containers == nil {
		return notOpened()
	}
	return nil
}

// notOpened is the error of a Store, Container or pager used without being
// made by Open, CreateContainer or NewQueryItemsPager.
func notOpened() error {
	return &Error{StatusCode: statusBadRequest, Message: "use a Store made by Open, and the containers and pagers it gives"}
}

// StoreStats describe a durable store's files since it opened; the zero
// value for a store in memory.
type StoreStats struct {
	LogBytes    int64 // bytes written to the write-ahead log
	LogSyncs    int64 // fsyncs of the log (each shared by the writes it made durable)
	Checkpoints int64 // snapshots written
	// LogFailed says that the log failed (its disk full or failing): the
	// store refuses writes until it is reopened, or, when its disk was
	// full, until a write finds room again. It is true for a store opened
	// read-only too.
	LogFailed bool
}

// Stats returns the store's statistics, as of one instant; the figures
// of its containers are Container.Stats. What recovery did is Recovery.
func (s *Store) Stats() StoreStats {
	w := s.wal
	if w == nil {
		return StoreStats{}
	}
	w.mu.Lock()
	st := StoreStats{LogBytes: int64(w.written - w.lostBytes), LogFailed: w.err != nil && w.err != ErrClosed}
	w.mu.Unlock()
	st.LogSyncs = w.syncs.Load()
	st.Checkpoints = s.checkpointer.taken.Load()
	return st
}
