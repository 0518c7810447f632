package lethe

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/lethedb/lethe/internal/logfile"
)

// The frame reader of recovery: one goroutine checks the frames of a file
// and copies its records, while the replaying one prefetches what they
// touch and replays them (replay.go).

// frame is a frame of a file read by frames: its offset and payload, and
// for an item write ('P'), its container id and record, decoded and copied
// onto the heap by the goroutine that reads the frames.
type frame struct {
	off     int64
	payload []byte
	cid     []byte // of an item write
	rec     record // of an item write; "" if it is malformed
	same    bool   // an item write of the same container id as the item write before it
	// c is the container of an item write as prefetch found it, si and h
	// the index of the item's shard and its hash bits in it.
	c  *Container
	si int
	h  uint32
}

// framesPerBatch is how many frames go from the reading goroutine to the
// replaying one at a time.
const framesPerBatch = 256

// frames reads the frames of a file's contents after its header, calling fn
// with each, in order. With tornOK, a torn frame at the end is not an
// error: frames returns its offset as the end of the good frames.
//
// Recovery works on two cores: a goroutine reads the frames, checks their
// lengths and checksums, and decodes and copies the records of item
// writes, while the caller's replays them (fn). It stops at the first
// error of either, and returns once it has stopped.
func (r *replayer) frames(data []byte, tornOK bool, fn func(f *frame) error) (end int64, err error) {
	var (
		batches = make(chan []frame, 4)
		free    = make(chan []frame, 6)
		stop    = make(chan struct{})
		readEnd int64
		readErr error
	)
	go func() {
		defer close(batches)
		readEnd, readErr = r.readFrames(data, tornOK, batches, free, stop)
	}()
	defer func() {
		// Stop the reader, also when fn panics (a fault on a mapped
		// page), and wait for it: it leaves no goroutine behind.
		close(stop)
		for range batches {
		}
	}()
	for batch := range batches {
		r.prefetch(batch)
		for i := range batch {
			if err := fn(&batch[i]); err != nil {
				off := int(batch[i].off)
				var ce *CorruptionError
				if errors.As(err, &ce) {
					return int64(off), err
				}
				return r.damaged(data, off, tornOK, err.Error())
			}
		}
		select {
		case free <- batch[:0]:
		default:
		}
	}
	return readEnd, readErr
}

// prefetch finds the shard and hash of each item write of a batch, and
// loads its home slot, before the batch is replayed: the cache misses of
// reading the records (written by the other core) and of the id tables'
// slots (anywhere in 20 MB) overlap, instead of coming one after the
// other. The container found is looked up again when the write is
// replayed if a frame of the batch before it made or dropped one
// (replayer.changes). A run of writes to one container (frame.same) looks
// it up once.
func (r *replayer) prefetch(batch []frame) {
	var (
		c      *Container
		looked bool // c was looked up for the run of writes to one container that f is in
		sum    uint32
	)
	r.prefetched = r.changes
	for i := range batch {
		f := &batch[i]
		if f.rec == "" {
			continue
		}
		if !f.same || !looked {
			c, looked = r.s.containers[string(f.cid)], true
		}
		if c == nil {
			continue
		}
		f.c = c
		f.si, f.h = c.shardIndex(f.rec.pk(), f.rec.id())
	}
	// A loop of its own, a few instructions a slot, so that many loads
	// are under way at once.
	for i := range batch {
		if f := &batch[i]; f.c != nil {
			if t := &f.c.shards[f.si].items; len(t.slots) > 0 {
				sum += t.slots[t.home(f.h)].hash
			}
		}
	}
	r.touched += sum
}

// readFrames is the reading half of frames: it sends the frames of data
// on batches, framesPerBatch at a time, until the end, the first damage, or
// stop, and returns the end of the good frames (with tornOK, a torn frame
// at the end is not an error). A fault reading a mapped page (the file was
// cut short) is returned as an error.
func (r *replayer) readFrames(data []byte, tornOK bool, batches chan<- []frame, free <-chan []frame, stop <-chan struct{}) (end int64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, fault := p.(interface{ Addr() uintptr }); !fault {
				panic(p)
			}
			end, err = 0, fmt.Errorf("lethe: reading %s: %v", r.file, p)
		}
	}()
	var (
		arena = &r.reading
		cid   []byte // of the last item write
	)
	batch := make([]frame, 0, framesPerBatch)
	send := func() bool {
		select {
		case batches <- batch:
		case <-stop:
			return false
		}
		select {
		case batch = <-free:
		default:
			batch = make([]frame, 0, framesPerBatch)
		}
		return true
	}
	off := logfile.HeaderSize(r.version)
	for off < len(data) {
		payload, ferr := logfile.ReadFrame(data[off:])
		if ferr != nil {
			// A torn frame at the end of the last segment is cut off;
			// other damage, unless zeros end the file (damaged).
			if !tornOK || !ferr.Torn {
				_, err = r.damaged(data, off, tornOK, ferr.Reason)
			}
			break
		}
		f := frame{off: int64(off), payload: payload}
		if payload[0] == framePut {
			d := decoder{b: payload[1:]}
			f.cid = d.str()
			if rec, ok := arena.record(r.version, d.b); ok && !d.bad {
				f.rec = rec
				f.same = cid != nil && bytes.Equal(f.cid, cid)
				cid = f.cid
			} else {
				cid = nil // prefetch skips a malformed put: the next is no run of it
			}
		}
		if batch = append(batch, f); len(batch) == framesPerBatch && !send() {
			return int64(off), nil // stopped: the caller has its error
		}
		off += frameHeader + len(payload)
	}
	// The frames before the end (or the damage) are replayed first: an
	// error of theirs comes before it.
	if len(batch) > 0 {
		send()
	}
	return int64(off), err
}

// damaged returns the error of damage found at off in data, saying why;
// with tornOK, damage followed by zeros to the end is a write torn by a
// power cut: whole sectors of it reached the disk, then the space the file
// system gave it, zeros. frames ends there, without an error.
func (r *replayer) damaged(data []byte, off int, tornOK bool, why string) (int64, error) {
	if tornOK && logfile.ZeroTail(data, off) {
		return int64(off), nil
	}
	return int64(off), &CorruptionError{File: r.file, Offset: int64(off), Reason: why}
}
