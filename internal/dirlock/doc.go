// Package dirlock gives one owner at a time a directory: lethe's durable
// stores and the REST front's data directory take it with Lock, so that a
// second store (in this process or another) fails at once with ErrLocked
// and touches nothing.
package dirlock

import "errors"

// ErrLocked is the error of Lock when another owner holds the directory.
// lethe.ErrLocked is this error.
var ErrLocked = errors.New("lethe: the directory is in use by another open store")
