package lethe

import "time"

// Options configure a Store. The zero value (or a nil *Options) gives an
// in-memory store on the system clock with the default reaper.
type Options struct {
	// Clock is the store's only source of time; nil means the system clock.
	Clock Clock
	// Reaper bounds the background purge of expired items.
	Reaper ReaperOptions
}

// ReaperOptions bound the background purge. The zero value gives sensible
// defaults.
type ReaperOptions struct {
	// Disabled runs no background goroutine: expired items stay, invisible,
	// until Container.Purge.
	Disabled bool
	// BatchSize is the most items purged from one container before the
	// reaper moves on to the next; 0 means DefaultReaperBatchSize.
	BatchSize int
	// MaxHold is the longest one batch may take; 0 means
	// DefaultReaperMaxHold. The reaper holds a lock only while it deletes
	// one item, so readers never wait behind a batch.
	MaxHold time.Duration
}

// Defaults of ReaperOptions.
const (
	DefaultReaperBatchSize = 256
	DefaultReaperMaxHold   = 100 * time.Microsecond
)
