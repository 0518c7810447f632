package lethe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lethedb/lethe/internal/vfs"
)

// The write-ahead log of a durable store. A durable store (Options.Dir)
// keeps its items in memory exactly as an in-memory store does, and
// appends every change to a log before it acknowledges it; snapshots
// (Store.Checkpoint) keep the log short. The files' format is in
// format.go.
//
// A change is appended to the log under the locks that make it, and
// applied in memory once the log holds it durably (mutation.go), so the
// log holds every item's changes in the order they were made, and a
// container's deletion after every change to it.
// A write or fsync of the log that fails is never retried as if nothing
// happened (flushLocked): before any writer hears of the failure the
// segment is cut back to its last acknowledged frame (cutBack), so that no
// refused write comes back at a reopen, and the store refuses writes: for
// good after a failed fsync or an I/O error, until there is room again
// after a full disk (heal), when the log goes on in a new segment, which
// begins with the change feeds' expiries that the failure dropped or that
// were found meanwhile: the feeds show them already.
// Recovery is in open.go and recover.go, snapshots in snapshot.go.

// SyncPolicy says when a durable store's acknowledged writes are on stable
// storage.
type SyncPolicy int

const (
	// SyncAlways: a write returns, and readers see it, only once its
	// change is on stable storage. Concurrent writers share each fsync
	// (group commit), so the store's write throughput grows with the
	// number of writers.
	SyncAlways SyncPolicy = iota
	// SyncEverySecond: a write returns, and readers see it, once its
	// change is written to the operating system, which keeps it if the
	// process dies; the log is synced once a second, so a machine crash
	// loses at most the last second, including writes readers saw.
	SyncEverySecond
	// SyncNever: as SyncEverySecond, but the log is synced only at
	// checkpoints and on Close; the operating system decides. A machine
	// crash may take back writes that readers saw.
	SyncNever
)

// String returns the policy's name, such as "SyncAlways".
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "SyncAlways"
	case SyncEverySecond:
		return "SyncEverySecond"
	case SyncNever:
		return "SyncNever"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// wal is a durable store's log. Writers append frames to a buffer under mu
// and wait; one goroutine, the committer, writes what has accumulated to
// the current segment and (under SyncAlways) syncs it, so every writer
// waiting meanwhile shares that write and that fsync.
type wal struct {
	fs       vfs.FS
	dir      string
	policy   SyncPolicy
	syncFile func(vfs.File) error // vfs.File.Sync; tests inject failures

	mu       sync.Mutex
	work     sync.Cond // the committer waits for frames
	progress sync.Cond // writers wait for their frames to be written or synced
	buf      []byte    // frames appended, not yet written
	spare    []byte
	appended uint64 // bytes appended since open: the end of the last frame
	written  uint64 // the end of what is written to the segment
	synced   uint64 // the end of what is on stable storage
	err      error  // the failure; ErrClosed once closed
	// healable says that err is a full disk's (diskFullError): heal may
	// clear it, once retryAt has passed. Any other failure is for good.
	healable   bool
	retryAt    time.Time
	retryEvery time.Duration // diskRetryEvery; tests shorten it
	closing    bool          // close has begun: no more heals; the committer stops
	// lost holds the tickets of the writes that a failure refused and a
	// heal then wrote past: they are never durable, whatever the log's
	// end says (lostIn).
	lost      []lostSpan
	lostBytes uint64 // their bytes, never written
	grown     int64  // bytes written since the last checkpoint
	grow      func(int64)

	// held is the expiry frames that the log must write first when it
	// heals (heal), in the order they were found: those it refused while
	// it had failed (addExpire), and those a failure dropped that the
	// change feed shows (keepExpiriesLocked). Empty while the log works;
	// while it is full, one frame an expiry found, as the feed grows.
	held []byte
	// afters is the expiries that addExpireAfter appended right after a
	// write and that may not be durable yet: a failure that drops one
	// keeps it only if its write was made (is durable).
	afters []afterExpire

	ioMu    sync.Mutex // held while writing to f or switching segments
	f       vfs.File
	seg     uint64    // the number of f's segment
	segSize int64     // the bytes written to it
	checked time.Time // when the segment's name was last checked (checkSegment)
	id      storeID

	// maxSeq is the highest write sequence number appended (under mu),
	// writtenSeq the highest written to a segment (under ioMu): what a
	// clean close records in the manifest.
	maxSeq, writtenSeq uint64

	stop   chan struct{}
	exited chan struct{}
	// resumer, for a store opened read-only (on a disk that takes no
	// writes: the log has no segment yet), finishes its Open once the disk
	// takes writes (heal); nil once it has, and for any other store.
	resumer resumer

	logger *slog.Logger // Options.Logger: told of the log's first failure; nil: none
	syncs  atomic.Int64 // fsyncs of the segments, for Store.Stats
}

// openWAL starts a log that appends to a new segment numbered seg.
func openWAL(fsys vfs.FS, dir string, id storeID, seg uint64, policy SyncPolicy, grow func(int64), logger *slog.Logger) (*wal, error) {
	w := newWAL(fsys, dir, id, seg, policy, grow, logger)
	f, err := createLogFile(fsys, dir, id, seg, w.syncFile)
	if err != nil {
		return nil, err
	}
	w.f, w.segSize = f, int64(fileHeaderV4)
	go w.run()
	return w, nil
}

func newWAL(fsys vfs.FS, dir string, id storeID, seg uint64, policy SyncPolicy, grow func(int64), logger *slog.Logger) *wal {
	w := &wal{fs: fsys, dir: dir, policy: policy, syncFile: vfs.File.Sync, grow: grow, seg: seg, id: id, stop: make(chan struct{}), exited: make(chan struct{}), logger: logger, retryEvery: diskRetryEvery}
	w.work.L, w.progress.L = &w.mu, &w.mu
	return w
}

// resumer finishes the Open of a store that opened read-only, once its
// disk takes writes (wal.heal).
type resumer interface {
	// resume repairs what recovery could not, creates the segment n and
	// writes the manifest that names it.
	resume(n uint64) (vfs.File, error)
	// resumed then appends what recovery found that the log must hold,
	// w.mu held, before any other write can.
	resumed()
}

// readOnly reports whether the log was opened read-only and has not
// healed since: it has no segment.
func (w *wal) readOnly() bool { return w.resumer != nil }

// startReadOnly starts w, made by newWAL, as the log of a store that Open
// found it cannot write to (cannotWrite), and returns it: it has failed
// from the start, with an error that says why (cause), until a heal finds
// that the disk takes writes and has r start the segment w.seg.
func (w *wal) startReadOnly(cause error, r resumer) *wal {
	w.resumer = r
	w.err, w.healable = &readOnlyError{dir: w.dir, err: cause}, true
	w.retryAt = time.Now().Add(w.retryEvery)
	go w.run()
	return w
}

// diskRetryEvery is how often at most a store whose disk was full tries
// to write again (heal), when a write comes.
const diskRetryEvery = time.Second

// readOnlyError is the failure of a store opened read-only.
type readOnlyError struct {
	dir string
	err error
}

func (e *readOnlyError) Error() string {
	what := "is full"
	if errors.Is(e.err, syscall.EROFS) {
		what = "is mounted read-only"
	}
	return fmt.Sprintf("the disk holding %s %s, so the store opened read-only: it takes writes again once there is room on it (or it is remounted for writing) (%v)", e.dir, what, e.err)
}

func (e *readOnlyError) Unwrap() error { return e.err }

// createLogFile creates the log segment n with its header, synced, and
// syncs the directory so that the file's name is durable too.
func createLogFile(fsys vfs.FS, dir string, id storeID, n uint64, syncFile func(vfs.File) error) (vfs.File, error) {
	name := segmentName(n)
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err = f.Write(appendHeader(nil, walMagic, id, n)); err == nil {
		err = syncFile(f)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		fsys.Remove(filepath.Join(dir, name)) // nothing was logged to it
		return nil, err
	}
	return f, nil
}

// addPut appends the write of an item, rec, to the container cid. It
// returns the ticket to wait for.
func (w *wal) addPut(cid string, rec record) (uint64, error) {
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	b, start := beginFrame(w.buf)
	b = append(b, framePut)
	b = appendStr(b, cid)
	b = append(b, rec...)
	w.maxSeq = max(w.maxSeq, rec.seq())
	return w.commitFrame(b, start), nil
}

// addRemove appends the removal of the item (pk, id) from the container
// cid, deleted or purged as why says.
func (w *wal) addRemove(cid string, why cause, pk, id string) (uint64, error) {
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	b, start := beginFrame(w.buf)
	b = append(b, frameRemove)
	b = appendStr(b, cid)
	b = append(b, byte(why))
	b = appendStr(b, pk)
	b = append(b, id...)
	return w.commitFrame(b, start), nil
}

// addFeedChange appends an item change of a container with a change feed:
// the write of m.rec, or the removal of m.old (deleted or purged).
func (w *wal) addFeedChange(cid string, m *mutation) (uint64, error) {
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	b, start := beginFrame(w.buf)
	if m.rec != "" {
		w.maxSeq = max(w.maxSeq, m.rec.seq())
		b = append(b, framePutFeed)
		b = appendStr(b, cid)
		b = append(b, byte(m.cause.changeKind()))
		b = append(b, m.rec...)
	} else {
		b = append(b, frameRemoveFeed)
		b = appendStr(b, cid)
		b = append(b, byte(m.cause))
		b = binary.AppendVarint(b, m.now)
		b = append(b, m.old...)
	}
	return w.commitFrame(b, start), nil
}

// addExpire appends an expiry that a container with a change feed found
// at now: rec expired at at. The feed has it already, and readers may
// have read it, so a log that refuses it for want of room keeps it (held)
// and writes it first when it heals, before any write it takes then; it
// returns the log's failure all the same.
func (w *wal) addExpire(cid string, now, at int64, rec record) (uint64, error) {
	err := w.begin()
	if err == nil {
		defer w.mu.Unlock()
		return w.appendExpireLocked(cid, now, at, rec), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err == nil: // healed since begin looked
		return w.appendExpireLocked(cid, now, at, rec), nil
	case w.healable && !w.closing:
		w.held = endFrame(expireFrame(w.held, cid, now, at, rec))
	}
	return 0, err
}

// addExpireAfter appends an expiry, as addExpire does, right after the
// write of ticket, and reports whether it did: not if the log has failed
// since, whether or not the write is lost (it neither heals the log nor
// waits), so that the expiry is never in the log without the write; and
// it remembers the two (afters), so that a failure that drops the expiry
// and not the write keeps the expiry, which the feed then shows, and one
// that drops both keeps neither (keepExpiriesLocked).
func (w *wal) addExpireAfter(ticket uint64, cid string, now, at int64, rec record) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || lostIn(w.lost, ticket) != nil {
		return false
	}
	durable := w.durableLocked()
	w.afters = slices.DeleteFunc(w.afters, func(a afterExpire) bool { return a.end <= durable })
	w.afters = append(w.afters, afterExpire{end: w.appendExpireLocked(cid, now, at, rec), write: ticket})
	return true
}

// afterExpire is an expiry addExpireAfter appended: the ticket of its
// frame (its end) and of the write it follows.
type afterExpire struct{ end, write uint64 }

// appendExpireLocked appends an expiry (addExpire); w.mu is held.
func (w *wal) appendExpireLocked(cid string, now, at int64, rec record) uint64 {
	return w.commitFrame(expireFrame(w.buf, cid, now, at, rec))
}

// expireFrame appends to b the frame of an expiry, all but its header
// (endFrame), and returns where it starts.
func expireFrame(b []byte, cid string, now, at int64, rec record) ([]byte, int) {
	b, start := beginFrame(b)
	b = append(b, frameExpire)
	b = appendStr(b, cid)
	b = binary.AppendVarint(b, now)
	b = binary.AppendVarint(b, at)
	return append(b, rec...), start
}

// keepExpiriesLocked keeps in held, for heal to write, the expiry frames
// among frames, which a failure for want of room refused, the first of
// them starting after the ticket from: every expiry the change feed
// shows, since the feed took it when it was appended; but not one
// addExpireAfter appended after a write the failure refused too, which
// the feed never shows (applyPendingLocked does not make that write, and
// so does not report its expiry). w.mu is held.
func (w *wal) keepExpiriesLocked(frames []byte, from uint64) {
	durable := w.durableLocked()
	for len(frames) >= frameHeader {
		n := frameHeader + int(binary.LittleEndian.Uint32(frames))
		frame := frames[:n]
		frames = frames[n:]
		from += uint64(n)
		if from <= durable || frame[frameHeader] != frameExpire {
			continue
		}
		i := slices.IndexFunc(w.afters, func(a afterExpire) bool { return a.end == from })
		if i < 0 || w.afters[i].write <= durable {
			w.held = append(w.held, frame...)
		}
	}
}

// addBatch appends the item changes of a transactional batch on the
// container cid as one frame; seq is the highest write sequence number the
// batch used.
func (w *wal) addBatch(cid string, seq uint64, ms []mutation, feed bool) (uint64, error) {
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	b, start := beginFrame(w.buf)
	b = append(b, frameBatch)
	b = appendStr(b, cid)
	b = binary.AppendUvarint(b, seq)
	w.maxSeq = max(w.maxSeq, seq)
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for i := range ms {
		m := &ms[i]
		switch {
		case feed && m.rec != "":
			b = append(b, framePutFeed, byte(m.cause.changeKind()))
			b = appendStr(b, string(m.rec))
			continue
		case feed:
			b = append(b, frameRemoveFeed, byte(m.cause))
			b = binary.AppendVarint(b, m.now)
			b = appendStr(b, string(m.old))
			continue
		case m.rec != "":
			b = append(b, framePut)
			b = appendStr(b, string(m.rec))
			continue
		}
		b = append(b, frameRemove, byte(m.cause))
		b = appendStr(b, m.old.pk())
		b = appendStr(b, m.old.id())
	}
	return w.commitFrame(b, start), nil
}

// addContainer appends a container's creation, settings change or
// deletion: kind is frameContainer, frameSettings or frameDrop, and text
// is the properties' JSON, or the id of the container deleted.
func (w *wal) addContainer(kind byte, seq uint64, now int64, text []byte) (uint64, error) {
	if err := w.begin(); err != nil {
		return 0, err
	}
	defer w.mu.Unlock()
	b, start := beginFrame(w.buf)
	b = append(b, kind)
	b = binary.AppendUvarint(b, seq)
	w.maxSeq = max(w.maxSeq, seq)
	b = binary.AppendVarint(b, now)
	b = binary.AppendUvarint(b, uint64(len(text)))
	b = append(b, text...)
	return w.commitFrame(b, start), nil
}

// begin locks w.mu for an append, or returns the log's failure. A log
// that failed because its disk was full first tries to heal, at most once
// every retryEvery.
func (w *wal) begin() error {
	w.mu.Lock()
	if w.err == nil {
		return nil
	}
	if !w.healable || w.closing || time.Now().Before(w.retryAt) {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.mu.Unlock()
	w.heal()
	w.mu.Lock()
	if err := w.err; err != nil {
		w.mu.Unlock()
		return err
	}
	return nil
}

// commitFrame finishes a frame appended to w.buf and wakes the committer;
// w.mu is held.
func (w *wal) commitFrame(b []byte, start int) uint64 {
	w.buf = endFrame(b, start)
	w.appended += uint64(len(w.buf) - start)
	w.work.Signal()
	return w.appended
}

// wait returns once the frames up to ticket are durable under the policy:
// synced under SyncAlways, written to the operating system otherwise. It
// returns the log's failure if they cannot be.
func (w *wal) wait(ticket uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if err := lostIn(w.lost, ticket); err != nil {
			return err
		}
		if w.synced >= ticket || (w.policy != SyncAlways && w.written >= ticket) {
			return nil
		}
		if w.err != nil {
			return w.err
		}
		w.progress.Wait()
	}
}

// durable returns the end of what the log holds durably under its policy
// (synced under SyncAlways, written to the operating system otherwise),
// the tickets in lost, which never are (lostIn), whatever the end, and
// its failure, if it has failed: nothing after that end will be.
func (w *wal) durable() (end uint64, lost []lostSpan, failed error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	failed = w.err
	if failed == ErrClosed {
		failed = nil // close wrote and synced what was appended first
	}
	return w.durableLocked(), w.lost, failed
}

func (w *wal) durableLocked() uint64 {
	if w.policy == SyncAlways {
		return w.synced
	}
	return w.written
}

// lostSpan is the tickets of the writes one failure refused, from after the
// end of what the log held durably then: (from, to].
type lostSpan struct {
	from, to uint64
	err      error // the failure
}

// lostIn returns the failure that refused the write of ticket, if one of
// the spans holds it, and nil otherwise. The spans are in order; a ticket
// past the last (every ticket, nearly always) is found at once.
func lostIn(lost []lostSpan, ticket uint64) error {
	for i := len(lost) - 1; i >= 0 && ticket <= lost[i].to; i-- {
		if ticket > lost[i].from {
			return lost[i].err
		}
	}
	return nil
}

// failure returns the log's failure, if it has failed or closed.
func (w *wal) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// run is the committer. Under SyncEverySecond it also syncs once a second.
func (w *wal) run() {
	defer close(w.exited)
	if w.policy == SyncEverySecond {
		go w.syncEverySecond()
	}
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && !w.closing {
			w.work.Wait()
		}
		stop := w.closing
		w.mu.Unlock()
		if stop {
			return
		}
		w.ioMu.Lock()
		w.flushLocked(w.policy == SyncAlways)
		w.ioMu.Unlock()
	}
}

func (w *wal) syncEverySecond() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.ioMu.Lock()
			w.flushLocked(true)
			w.ioMu.Unlock()
		}
	}
}

// flushLocked writes what has been appended to the segment and, with sync,
// syncs it. w.ioMu is held. A failure fails the log for good.
func (w *wal) flushLocked(sync bool) error {
	w.mu.Lock()
	data, end, seq := w.buf, w.appended, w.maxSeq
	w.buf, w.spare = w.spare[:0], data
	failed := w.err != nil && w.err != ErrClosed
	w.mu.Unlock()
	if failed {
		return w.failure()
	}
	var err error
	if len(data) > 0 {
		_, err = w.f.Write(data)
	}
	full := err != nil && cannotWrite(err) // a write the disk had no room for
	if err == nil && sync {
		err = w.syncFile(w.f)
		w.syncs.Add(1)
	}
	if err == nil && (sync || len(data) > 0 && time.Since(w.checked) >= checkEvery) {
		// What was written is kept only if the segment still has its
		// name: a segment removed or replaced under the store stops the
		// writes at the first commit that syncs after (one fstat), and
		// at the first that writes checkEvery after the last check.
		err = w.checkSegment()
		w.checked = time.Now()
	}
	if err == nil {
		w.segSize += int64(len(data))
		w.writtenSeq = max(w.writtenSeq, seq)
	} else if cerr := w.cutBack(); cerr != nil {
		full = false
		if w.logger != nil {
			w.logger.Error("lethe: a failed write could not be cut off the write-ahead log: reopened, the store may bring back writes it refused",
				"dir", w.dir, "file", segmentName(w.seg), "err", cerr)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil || w.err == ErrClosed {
			if full {
				w.keepExpiriesLocked(data, end-uint64(len(data)))
			}
			w.failLocked(err, full)
		}
	} else {
		w.written = max(w.written, end)
		if sync {
			w.synced = max(w.synced, end)
		}
		w.grown += int64(len(data))
		if w.grow != nil && len(data) > 0 {
			w.grow(w.grown)
		}
	}
	w.progress.Broadcast()
	return err
}

// cutBack cuts the segment back to its last good frame after a failed
// write, fsync or check, before anyone is told of the failure: to
// segSize, the end of what was written without error, which holds every
// frame acknowledged and none that was refused. The frames that failed
// may be whole in the file (a failed fsync leaves them in the page cache,
// which may yet write them; a short write may hold whole frames of other
// writers), and recovery would bring them back. A truncation drops them
// from the page cache too, and once it is synced the file's new size is
// on the disk: this fsync proves no more than that, and nothing is
// assumed of the fsync that failed (the data it was to write may or may
// not be on the disk, and its pages may have been dropped: see
// PostgreSQL's fsync errors). If the truncation or its fsync fails, the
// disk takes no change at all; the failure is for good, and the store
// cannot make sure that the refused frames stay out of a reopen: it logs
// so.
func (w *wal) cutBack() error {
	if err := w.f.Truncate(w.segSize); err != nil {
		return err
	}
	return w.syncFile(w.f)
}

// heal tries again to write to a log that failed because its disk was
// full, at most once every retryEvery (begin calls it on a write). The
// segment the failure was in was cut back to its last acknowledged frame
// (cutBack), durably: heal leaves it as it is and starts the next
// segment, which recovery replays after it; or, for a store opened
// read-only, finishes its Open (resume). If that fails for want of room,
// the log stays failed until the next try; if it fails otherwise, for
// good. If it works, the log takes writes again; the writes the failure
// refused stay refused: their frames are dropped and their tickets
// recorded as lost, so that no waiter, and no container's queue of
// pending changes, takes them for durable once the log's end passes them.
// But a change feed's expiries are not writes the store refused: the feed
// took each when it was found, and readers may have read it. So the
// expiry frames the failure dropped, or that the log refused while it had
// failed, are kept (held) and written first, in the order they were found,
// before any write the log takes from then on: the feed a restart replays
// numbers its changes as the feed in memory did. (A log that fails for
// good writes nothing more, and keeps nothing: no change follows those
// expiries in it, so the next Open finds them again, where the feed had
// them.)
func (w *wal) heal() {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	if w.err == nil || !w.healable || w.closing || time.Now().Before(w.retryAt) {
		w.mu.Unlock()
		return // healed by another, or not due
	}
	w.retryAt = time.Now().Add(w.retryEvery)
	w.mu.Unlock()
	n := w.seg + 1
	var f vfs.File
	var err error
	if w.resumer != nil {
		n = w.seg
		f, err = w.resumer.resume(n)
	} else {
		f, err = createLogFile(w.fs, w.dir, w.id, n, w.syncFile)
	}
	w.mu.Lock()
	if err != nil {
		if !cannotWrite(err) {
			w.failLocked(err, false)
		}
		w.mu.Unlock()
		return
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.seg, w.segSize = f, n, int64(fileHeaderV4)
	if end := w.durableLocked(); w.appended > end {
		w.lost = append(slices.Clip(w.lost), lostSpan{from: end, to: w.appended, err: w.err})
		w.lostBytes += w.appended - end
	}
	w.buf = w.buf[:0]
	w.written, w.synced = w.appended, w.appended // the old segment is synced (cutBack), and the rest is lost
	w.maxSeq = w.writtenSeq                      // and so are the write sequence numbers the rest used
	w.err, w.healable = nil, false
	if w.resumer != nil {
		w.resumer.resumed()
		w.resumer = nil
	}
	if len(w.held) > 0 { // after what a read-only Open found, which came first
		w.buf = append(w.buf, w.held...)
		w.appended += uint64(len(w.held))
		w.work.Signal()
	}
	w.held, w.afters = nil, nil
	w.mu.Unlock()
	if w.logger != nil {
		w.logger.Info("lethe: the disk has room again: the store takes writes", "dir", w.dir, "file", segmentName(n))
	}
}

// checkEvery is how often a log that does not sync at each commit checks
// that its segment still has its name: a check is a system call, which
// costs more than a small commit's write.
const checkEvery = time.Millisecond

// checkSegment fails if the current segment no longer has its name.
func (w *wal) checkSegment() error {
	gone, err := w.f.Gone()
	if err == nil && gone {
		err = &goneError{path: filepath.Join(w.dir, segmentName(w.seg))}
	}
	return err
}

// goneError is the failure of a log whose segment was removed or replaced
// while the store had it open.
type goneError struct{ path string }

func (e *goneError) Error() string {
	return "the log segment " + e.path + " was removed or replaced while the store had it open: the changes written to it since are lost with it"
}

// sync writes and syncs everything appended so far.
func (w *wal) sync() error {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	return w.flushLocked(true)
}

// rotate writes and syncs everything appended so far, then starts a new
// segment, whose number it returns: every change appended before rotate
// returned is in the segments before it.
func (w *wal) rotate() (uint64, error) {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	if err := w.flushLocked(true); err != nil {
		return 0, err
	}
	if err := w.failure(); err != nil {
		return 0, err
	}
	f, err := createLogFile(w.fs, w.dir, w.id, w.seg+1, w.syncFile)
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.failLocked(err, cannotWrite(err)) // nothing is cut: the segment was whole
		}
		w.progress.Broadcast()
		w.mu.Unlock()
		return 0, err
	}
	w.f.Close()
	w.f, w.segSize = f, int64(fileHeaderV4)
	w.seg++
	w.mu.Lock()
	w.grown = 0
	w.mu.Unlock()
	return w.seg, nil
}

// close writes and syncs what is appended, stops the committer and closes
// the segment. Appends fail with ErrClosed afterwards.
func (w *wal) close() error {
	w.ioMu.Lock()
	err := w.flushLocked(true)
	w.mu.Lock()
	if w.err == nil {
		w.err = ErrClosed
	}
	w.closing = true
	w.work.Broadcast()
	w.progress.Broadcast()
	w.mu.Unlock()
	w.ioMu.Unlock()
	close(w.stop)
	<-w.exited
	if w.readOnly() {
		return nil // nothing was written: nothing is lost
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// logError is the failure of the log to write or sync: the store refuses
// writes from then on.
type logError struct{ err error }

// diskFullError is the failure of the log to write for want of room:
// the store refuses writes until there is room again (heal).
type diskFullError struct {
	dir string
	err error
}

func (e *diskFullError) Error() string {
	return fmt.Sprintf("the disk holding %s is full: the store refuses writes until there is room on it again, then takes them (%v)", e.dir, e.err)
}

func (e *diskFullError) Unwrap() error { return e.err }

// failLocked makes err the log's failure, and logs it: from now on the
// store refuses writes; for good, unless full says that the disk only
// had no room for a write that left nothing behind (cutBack), which a
// heal may then write past, having written the expiries kept from the
// frames appended and not written (keepExpiriesLocked: the caller keeps
// those of the frames it failed to write, failLocked those of w.buf). The
// caller holds w.mu.
func (w *wal) failLocked(err error, full bool) {
	w.healable = full
	if full {
		w.keepExpiriesLocked(w.buf, w.appended-uint64(len(w.buf)))
		w.err = &diskFullError{dir: w.dir, err: err}
		w.retryAt = time.Now().Add(w.retryEvery)
		if w.logger != nil {
			w.logger.Error("lethe: the disk is full: the store refuses writes until there is room on it again",
				"dir", w.dir, "err", err)
		}
		return
	}
	w.err = &logError{err}
	w.held, w.afters = nil, nil // never written: see heal
	if w.logger != nil {
		w.logger.Error("lethe: the write-ahead log cannot be written: the store refuses writes until it is reopened",
			"dir", w.dir, "err", err)
	}
}

func (e *logError) Error() string {
	return "the write-ahead log failed, so the store refuses writes until it is reopened: " + e.err.Error()
}

func (e *logError) Unwrap() error { return e.err }

// storageError turns a failure of the log into the error of the operation
// op: ErrClosed, or an *Error 503 (ErrUnavailable) that wraps the I/O error.
func storageError(err error, op, container, item string) error {
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	return withContext(&Error{StatusCode: statusServiceUnavailable, Message: err.Error(), Err: err}, op, container, item)
}
