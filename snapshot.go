package lethe

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe/internal/manifest"
)

// Snapshots (checkpoints) keep a durable store's log short. A snapshot is
// taken in the background once the log has grown by checkpointMinGrowth and
// by the size of the last snapshot, soon after a container is deleted, and
// whenever Checkpoint is called. Taking one:
//
//  1. The log moves on to a new segment, n: every change made before is in
//     the segments before n, synced.
//  2. The live items and each container's state are written to
//     snap-<n>.db.tmp, from the records themselves (immutable, so each
//     shard's read lock is held only to list them, never during I/O);
//     expired items are left out. In the background the writing is paced
//     at checkpointPace bytes a second, so that users keep their latency.
//  3. The file is synced, and the log too (the items read may have been
//     written after the rotation: their changes must be durable before the
//     snapshot is); the file is renamed to snap-<n>.db, the directory synced;
//     then the segments before n and the older snapshots are removed.
//
// The format is in format.go, recovery in recover.go.

const (
	checkpointMinGrowth = 64 << 20
	checkpointPace      = 64 << 20
)

// Checkpoint takes a snapshot of a durable store now and trims its log; it
// also happens by itself. It returns when the snapshot is durable. On an
// in-memory store it does nothing. It stops early, with ctx's error, when
// ctx is done; the log is then as it was.
func (s *Store) Checkpoint(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.wal == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return s.checkpointer.take(ctx, 0)
}

// checkpointer takes the background snapshots, one at a time with those
// Checkpoint asks for.
type checkpointer struct {
	s        *Store
	mu       sync.Mutex   // one snapshot at a time
	closed   bool         // under mu: the store has closed, no more snapshots
	lastSize atomic.Int64 // the size of the last snapshot
	pending  chan struct{}
	stop     chan struct{}
	done     chan struct{}
	// taken counts the snapshots written, for tests.
	taken atomic.Int64
}

func newCheckpointer(s *Store, lastSize int64) *checkpointer {
	cp := &checkpointer{s: s, pending: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	cp.lastSize.Store(lastSize)
	return cp
}

// grew is told by the log how much it has grown since the last snapshot.
// It is called with the log's lock held, so it only signals.
func (cp *checkpointer) grew(bytes int64) {
	if bytes >= checkpointMinGrowth && bytes >= cp.lastSize.Load() {
		cp.kick()
	}
}

// kick asks for a background snapshot.
func (cp *checkpointer) kick() {
	select {
	case cp.pending <- struct{}{}:
	default:
	}
}

func (cp *checkpointer) run() {
	defer close(cp.done)
	for {
		select {
		case <-cp.stop:
			return
		case <-cp.pending:
			// A failure leaves the log as it was; the next one tries again.
			if err := cp.take(context.Background(), checkpointPace); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errCheckpointStopped) && cp.s.opts.Logger != nil {
				cp.s.opts.Logger.Error("lethe: a checkpoint failed: the log grows until one succeeds",
					"dir", cp.s.opts.Dir, "err", err)
			}
		}
	}
}

// close stops the background snapshots, abandoning one under way, and
// waits for a Checkpoint under way to give up.
func (cp *checkpointer) close() {
	close(cp.stop)
	<-cp.done
	cp.mu.Lock()
	cp.closed = true
	cp.mu.Unlock()
}

// take writes a snapshot, at most pace bytes a second (0: at full speed).
func (cp *checkpointer) take(ctx context.Context, pace int64) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.closed {
		return ErrClosed
	}
	s := cp.s
	n, feeds, err := s.rotateWithFeeds()
	if err != nil {
		return storageError(err, "Checkpoint", "", "")
	}
	fsys, dir := s.opts.fs, s.opts.Dir
	path := filepath.Join(dir, snapshotName(n))
	size, seq, err := cp.write(ctx, path+".tmp", n, pace, feeds)
	if err == nil {
		// The snapshot holds the items as they were when it read them,
		// some written after the rotation: their log frames, appended
		// before, must be durable before the snapshot is, or a power cut
		// could leave an item in the snapshot whose change the log lost
		// (and the change feed with it).
		err = s.wal.sync()
	}
	if err != nil {
		fsys.Remove(path + ".tmp")
		return checkpointError(err)
	}
	if err := fsys.Rename(path+".tmp", path); err != nil {
		return checkpointError(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return checkpointError(err)
	}
	// The manifest names the snapshot before what it replaces goes: a
	// manifest that named those files would find them missing.
	if err := s.writeManifest(manifest.Manifest{Snapshot: n, Log: n, Seq: max(s.manifest.Seq, seq), Items: s.itemCounts()}); err != nil {
		return checkpointError(err)
	}
	cp.lastSize.Store(size)
	cp.taken.Add(1)
	// The snapshot is durable: what it replaces can go.
	names, err := fsys.List(dir)
	if err != nil {
		return checkpointError(err)
	}
	for _, name := range names {
		if m, ok := fileNumber(name, "wal-", ".log"); ok && m < n {
			fsys.Remove(filepath.Join(dir, name))
		}
		if m, ok := fileNumber(name, "snap-", ".db"); ok && m != n {
			fsys.Remove(filepath.Join(dir, name))
		}
	}
	return checkpointError(fsys.SyncDir(dir))
}

// checkpointError is the error of a snapshot that failed: the error of a
// context, or of a store closing, as it is; an I/O error as an *Error 503
// (ErrUnavailable) that wraps it. The log goes on: the next snapshot
// starts afresh.
func checkpointError(err error) error {
	if err == nil || errors.Is(err, errCheckpointStopped) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return storageError(err, "Checkpoint", "", "")
}

// errCheckpointStopped abandons a background snapshot when the store closes.
var errCheckpointStopped = errors.New("lethe: the store closed during a checkpoint")

// write writes the snapshot file, number n, and syncs it; it returns its
// size and the write sequence number its end frame records.
func (cp *checkpointer) write(ctx context.Context, path string, n uint64, pace int64, feeds []feedState) (size int64, seq uint64, err error) {
	s := cp.s
	f, err := s.opts.fs.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	out := &pacedWriter{w: bufio.NewWriterSize(f, 1<<20), pace: pace, start: time.Now(), stop: cp.stop, ctx: ctx}
	out.write(appendHeader(nil, snapMagic, s.storeID, n))
	now := s.clock.now()
	var (
		frame []byte
		recs  []record
		tombs []tombstone
		items uint64
	)
	for _, st := range feeds {
		c := st.c
		// Any one shard lock keeps settings changes out (they take them
		// all), so the state read matches the log up to the rotation.
		c.shards[0].mu.RLock()
		c.mu.Lock()
		props, rule, created, settingsSeq := c.props, c.rule, c.created, c.settingsSeq
		c.mu.Unlock()
		c.shards[0].mu.RUnlock()
		frame = appendStateFrame(frame[:0], created, settingsSeq, props, &rule, c.positions.Load())
		multi := c.multiWrite()
		out.write(frame)
		for i := range c.shards {
			sh := &c.shards[i]
			recs = recs[:0]
			sh.mu.RLock()
			tombs = tombs[:0]
			sh.items.all(func(rec record) bool {
				switch {
				case c.rule.live(rec, now):
					recs = append(recs, rec)
				case multi: // left out: a tombstone instead
					tombs = append(tombs, tombstone{pk: rec.pk(), id: rec.id(), gen: nextGen(rec)})
				}
				return true
			})
			if multi {
				tombs = sh.appendTombs(tombs, c)
			}
			sh.mu.RUnlock()
			for _, rec := range recs {
				b, start := beginFrame(frame[:0])
				b = append(b, framePut)
				b = appendStr(b, c.id)
				b = append(b, rec...)
				frame = endFrame(b, start)
				out.write(frame)
				items++
			}
			for _, tb := range tombs {
				frame = appendTombFrame(frame[:0], c.id, tb)
				out.write(frame)
			}
			if out.err != nil {
				return 0, 0, out.err
			}
		}
		frame = st.writeFrame(out, frame[:0])
	}
	b, start := beginFrame(frame[:0])
	b = append(b, frameEnd)
	b = binary.AppendUvarint(b, items)
	seq = s.seq.Load()
	b = binary.AppendUvarint(b, seq)
	out.write(endFrame(b, start))
	if out.err == nil {
		out.err = out.w.Flush()
	}
	if out.err == nil {
		out.err = f.Sync()
	}
	return out.n, seq, out.err
}

// feedState is a container's change feed as of a snapshot's log rotation.
type feedState struct {
	c       *Container
	found   int64       // the instant its expiries had been found up to
	first   uint64      // the lsn of entries[0], or next
	next    uint64      // the lsn of the next change
	entries []feedEntry // nil without a feed
}

// rotateWithFeeds starts a new log segment and returns its number, with
// every container and the state of its change feed at that point: every
// container's mu is held across the rotation (and the store's
// lock, so that none is made meanwhile), and a container with a feed logs
// its changes under that lock, so the states hold exactly the changes
// logged before the new segment. The expiries due are found first, so
// that the snapshot, which leaves out the items expired by its instant,
// loses no expiry the feed has not seen.
func (s *Store) rotateWithFeeds() (uint64, []feedState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.clock.now()
	cs := s.list
	for _, c := range cs {
		c.mu.Lock()
	}
	var found int
	for _, c := range cs {
		if c.mu.feed.history != nil {
			found += c.findExpiriesLocked(now, true)
			c.publishDueLocked()
		}
	}
	n, err := s.wal.rotate()
	states := make([]feedState, len(cs))
	for i, c := range cs {
		c.applyPendingLocked() // rotate synced them (none is left after findExpiriesLocked, but for certain)
		st := feedState{c: c, first: c.mu.feed.nextLSN, next: c.mu.feed.nextLSN}
		if f := c.mu.feed.history; f != nil {
			st.found, st.first, st.next = c.mu.watch.at, f.first, f.next
			st.entries = f.all()
		}
		states[i] = st
	}
	for _, c := range cs {
		c.mu.Unlock()
		c.wakeNotifier(found)
	}
	return n, states, err
}

// appendStateFrame appends a snapshot's 'K' frame for a container, whose
// last position handed out is positions.
func appendStateFrame(b []byte, created, settingsSeq uint64, props ContainerProperties, rule *expiryRule, positions uint64) []byte {
	b, start := beginFrame(b)
	b = append(b, frameState)
	b = binary.AppendUvarint(b, created)
	b = binary.AppendUvarint(b, settingsSeq)
	text := propsJSON(props)
	b = binary.AppendUvarint(b, uint64(len(text)))
	b = append(b, text...)
	b = binary.AppendVarint(b, int64(rule.def))
	b = binary.AppendVarint(b, rule.finalInherit)
	b = binary.AppendVarint(b, rule.finalOwn)
	b = binary.AppendUvarint(b, uint64(len(rule.past)))
	for _, p := range rule.past {
		b = binary.AppendVarint(b, p.cut)
		b = binary.AppendVarint(b, int64(p.def))
	}
	b = binary.AppendUvarint(b, positions)
	return endFrame(b, start)
}

// propsJSON is the logged form of container properties.
func propsJSON(p ContainerProperties) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic("lethe: container properties cannot be encoded: " + err.Error()) // plain fields: cannot happen
	}
	return b
}

// pacedWriter writes a snapshot, keeping to pace bytes a second, and stops
// when the store closes or ctx is done. It keeps its first error.
type pacedWriter struct {
	w     *bufio.Writer
	pace  int64
	start time.Time
	stop  <-chan struct{}
	ctx   context.Context
	n     int64
	mark  int64 // n at the last check
	err   error
}

func (p *pacedWriter) write(b []byte) {
	if p.err != nil {
		return
	}
	_, p.err = p.w.Write(b)
	p.n += int64(len(b))
	if p.n-p.mark < 1<<20 {
		return
	}
	p.mark = p.n
	if err := p.ctx.Err(); err != nil {
		p.err = err
		return
	}
	var wait time.Duration
	if p.pace > 0 {
		wait = time.Duration(float64(p.n)/float64(p.pace)*float64(time.Second)) - time.Since(p.start)
	}
	if wait <= 0 {
		select {
		case <-p.stop:
			p.err = errCheckpointStopped
		default:
		}
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.stop:
		p.err = errCheckpointStopped
	case <-p.ctx.Done():
		p.err = p.ctx.Err()
	case <-t.C:
	}
}
