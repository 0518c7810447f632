package lethe

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/lethedb/lethe/internal/vfs"
)

// Options configure a Store. The zero value (or a nil *Options) gives an
// in-memory store on the system clock with the default reaper.
type Options struct {
	// Clock is the store's only source of time; nil means the system clock.
	Clock Clock
	// Reaper bounds the background purge of expired items.
	Reaper ReaperOptions
	// Dir is "" for an in-memory store. A directory makes the store
	// durable: it lives there, is logged and snapshotted, and survives
	// restarts and crashes (see Open and Store.Checkpoint).
	Dir string
	// Sync says when a durable store's acknowledged writes are on stable
	// storage; the zero value is SyncAlways.
	Sync SyncPolicy
	// Throughput is the store's shared throughput, in request units per
	// second (a store is a database: Cosmos DB's database-level
	// throughput): one budget that every container without throughput of
	// its own draws on, users and reaper alike, so that together they
	// spend at most this much. 0: none (such containers are unlimited).
	// Store.ReplaceThroughput changes it while the store is open; it is
	// configuration, as the other options are, so a durable store does not
	// keep it: give it again at every Open.
	Throughput int32
	// AutoscaleMaxThroughput, instead of Throughput, makes the shared
	// throughput autoscale, with this maximum (see
	// ContainerProperties.AutoscaleMaxThroughput). Never set with
	// Throughput.
	AutoscaleMaxThroughput int32
	// QueryBudget bounds the work and memory of each page of a query; the
	// zero value gives the service's limits (see QueryBudget).
	QueryBudget QueryBudget
	// Logger receives what an operator of a durable store needs to know
	// and no call returns: a torn end of the log that recovery cut off
	// (warn), a store opened read-only because its disk takes no writes,
	// a log that can no longer be written, a background checkpoint that
	// failed (error). nil: nothing is logged. lethe logs nothing else.
	Logger *slog.Logger
	// WriteRegions and WriteRegion make the ETags of a store that is one of
	// WriteRegions replicas taking writes at once (an account with several
	// write regions, replicating with Container.ApplyReplicaChangeResolved)
	// its own: every write sequence number it hands out is, but for its
	// last 16 bits, WriteRegion more than a multiple of WriteRegions, so
	// that no two replicas give one ETag to two versions; the last 16 bits
	// are the version's generation (ConflictRule). 0 and 0: the store is
	// the only writer.
	//
	// A store of several write regions keeps, for each item removed
	// (deleted, or expired and purged) and not written since, a tombstone
	// of its last removal's generation, in memory and in its snapshots,
	// whatever its change feed still keeps: 30 to 60 bytes and the item's
	// id and encoded partition key value each, until the item is written
	// again. A store that is the only writer keeps none.
	WriteRegions, WriteRegion int

	// fs is the file system a durable store lives on: vfs.OS unless a
	// test sets another (through vfs.SetOptionsFS; see vfs's doc for why
	// it is not an option of the API).
	fs vfs.FS
	// afterMap, when set (by tests: WithAfterMap), is called with each file
	// recovery has just mapped, so that a test can change it under it.
	afterMap func(path string)
}

func init() {
	vfs.SetOptionsFS = func(opts any, fsys vfs.FS) { opts.(*Options).fs = fsys }
}

// ReaperOptions bound the background purge. The zero value gives sensible
// defaults.
type ReaperOptions struct {
	// Disabled runs no background goroutine: expired items stay, invisible,
	// until Container.Purge.
	Disabled bool
	// BatchSize is the most items purged from one container before the
	// reaper moves on to the next; 0 means DefaultReaperBatchSize, and it
	// may not exceed MaxReaperBatchSize.
	BatchSize int
	// MaxHold is how long one batch may take while the store serves users
	// (with nobody served since the reaper last looked, a batch runs to its
	// size); 0 means DefaultReaperMaxHold, and it may not exceed
	// MaxReaperMaxHold. The reaper sizes each such batch to fit in three
	// quarters of MaxHold at the pace of the container's last one (not one
	// the spare budget cut short), and never cuts a batch part way for
	// time (so that a batch cut short by the budget has purged the items
	// that expired first): a batch slower than the last may run over.
	// The reaper holds a shard's lock only while it deletes that shard's
	// items of one batch, so a reader waits at most that long.
	MaxHold time.Duration
}

// Defaults and limits of ReaperOptions.
const (
	DefaultReaperBatchSize = 256
	DefaultReaperMaxHold   = 100 * time.Microsecond
	// MaxReaperBatchSize bounds BatchSize: the reaper keeps scratch room
	// for a few batches, allocated once.
	MaxReaperBatchSize = 1 << 16
	// MaxReaperMaxHold bounds MaxHold: past it, a batch would hold the
	// reaper's attention long enough to starve other containers.
	MaxReaperMaxHold = time.Second
)

// OptionError reports an invalid option given to Open. It is a plain error,
// not an *Error: no request was made.
type OptionError struct {
	Option string // the option's name, such as "Reaper.BatchSize"
	Value  any    // the value given
	Reason string // what is wrong with it
}

// Error formats the error as "lethe: Open: option Reaper.BatchSize = -1: reason".
func (e *OptionError) Error() string {
	return fmt.Sprintf("lethe: Open: option %s = %v: %s", e.Option, e.Value, e.Reason)
}

// withDefaults validates o and fills in the defaults of the zero values. It
// is the one place that knows the options' limits.
func (o Options) withDefaults() (Options, error) {
	if mc, ok := o.Clock.(*ManualClock); ok && mc == nil {
		return o, &OptionError{"Clock", "(*ManualClock)(nil)", "a nil *ManualClock; use NewManualClock, or nil for the system clock"}
	}
	if o.Sync < SyncAlways || o.Sync > SyncNever {
		return o, &OptionError{"Sync", o.Sync, "not SyncAlways, SyncEverySecond or SyncNever"}
	}
	switch problem := throughputProblem(o.Throughput, o.AutoscaleMaxThroughput); {
	case problem == "":
	case o.Throughput != 0 && o.AutoscaleMaxThroughput == 0:
		return o, &OptionError{"Throughput", o.Throughput, problem}
	default:
		return o, &OptionError{"AutoscaleMaxThroughput", o.AutoscaleMaxThroughput, problem}
	}
	switch {
	case o.WriteRegions < 0:
		return o, &OptionError{"WriteRegions", o.WriteRegions, "negative"}
	case o.WriteRegion < 0 || o.WriteRegion >= max(o.WriteRegions, 1):
		return o, &OptionError{"WriteRegion", o.WriteRegion, fmt.Sprintf("not from 0 to WriteRegions-1 (WriteRegions is %d)", o.WriteRegions)}
	}
	if o.fs == nil {
		o.fs = vfs.OS
	}
	r := &o.Reaper
	switch {
	case r.BatchSize < 0:
		return o, &OptionError{"Reaper.BatchSize", r.BatchSize, "negative; use 0 for the default"}
	case r.BatchSize > MaxReaperBatchSize:
		return o, &OptionError{"Reaper.BatchSize", r.BatchSize, fmt.Sprintf("over the limit of %d", MaxReaperBatchSize)}
	case r.BatchSize == 0:
		r.BatchSize = DefaultReaperBatchSize
	}
	if err := o.QueryBudget.withDefaults(); err != nil {
		return o, err
	}
	switch {
	case r.MaxHold < 0:
		return o, &OptionError{"Reaper.MaxHold", r.MaxHold, "negative; use 0 for the default"}
	case r.MaxHold > MaxReaperMaxHold:
		return o, &OptionError{"Reaper.MaxHold", r.MaxHold, fmt.Sprintf("over the limit of %v", MaxReaperMaxHold)}
	case r.MaxHold == 0:
		r.MaxHold = DefaultReaperMaxHold
	}
	return o, nil
}
