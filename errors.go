package lethe

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The sentinel errors. Every failure of an operation is an *Error; errors.Is
// matches it against the sentinel of its status code, so callers can write
// errors.Is(err, lethe.ErrNotFound) without looking at numbers.
var (
	// ErrBadRequest (400): an invalid TTL, id, JSON document, query, property or size.
	ErrBadRequest error = &statusError{statusBadRequest, "lethe: bad request"}
	// ErrNotFound (404): a missing or expired item, or a missing container.
	ErrNotFound error = &statusError{statusNotFound, "lethe: not found"}
	// ErrConflict (409): a create of an id that exists and has not expired.
	ErrConflict error = &statusError{statusConflict, "lethe: conflict"}
	// ErrRequestTimeout (408): a query that could not make progress within
	// one page's QueryBudget (see QueryBudget).
	ErrRequestTimeout error = &statusError{statusRequestTimeout, "lethe: request timeout"}
	// ErrPreconditionFailed (412): an IfMatchEtag that does not match the item's _etag.
	ErrPreconditionFailed error = &statusError{statusPreconditionFailed, "lethe: precondition failed"}
	// ErrRequestTooLarge (413): an item over the 2 MB size limit.
	ErrRequestTooLarge error = &statusError{statusRequestEntityTooLarge, "lethe: request entity too large"}
	// ErrTooManyRequests (429): the operation would overdraw the container's
	// throughput; the *Error carries RetryAfter.
	ErrTooManyRequests error = &statusError{statusTooManyRequests, "lethe: too many requests"}
	// ErrUnavailable (503): a durable store's write-ahead log failed to
	// write or sync, so the store refuses writes until it is reopened, or,
	// when its disk was full, until there is room again; reads go on. The
	// *Error wraps the I/O error.
	ErrUnavailable error = &statusError{statusServiceUnavailable, "lethe: service unavailable"}
	// ErrClosed is returned by every call on a Store, or one of its
	// containers, after Store.Close.
	ErrClosed = errors.New("lethe: store is closed")
)

// statusError is the type of the status sentinels.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// Error describes a failed operation. It carries the Cosmos-style HTTP status
// code, what was wrong and where. Use errors.Is with the sentinels (ErrNotFound,
// ...) to test the kind, and errors.As to read the details.
type Error struct {
	StatusCode int           // 400, 404, 408, 409, 412, 413, 429, 503
	Message    string        // what was wrong, for a person
	RetryAfter time.Duration // set on 429: when the operation would succeed

	Op        string // the operation, such as "CreateItem"
	Container string // the container id, when there is one
	ItemID    string // the item id, when known
	Err       error  // the underlying cause, if any
}

// Error formats the error as "lethe: Op container "c" item "i": Status:
// message" (an operation on a container itself names it once: "lethe:
// DeleteContainer "c": ..."). Ids longer than maxShown bytes are clipped.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("lethe: ")
	b.WriteString(e.Op)
	if e.Container != "" {
		if !strings.HasSuffix(e.Op, "Container") {
			b.WriteString(" container")
		}
		fmt.Fprintf(&b, " %q", clip(e.Container))
	}
	if e.ItemID != "" {
		fmt.Fprintf(&b, " item %q", clip(e.ItemID))
	}
	if e.Op != "" || e.Container != "" || e.ItemID != "" {
		b.WriteString(": ")
	}
	b.WriteString(statusText(e.StatusCode))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && e.Message == "" {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// maxShown is the most bytes of an id or a piece of input that an error
// message shows.
const maxShown = 64

// clip shortens an id or a piece of input for a message: its first maxShown
// bytes, cut at a character boundary, and "...".
func clip[T string | []byte](s T) string {
	if len(s) <= maxShown {
		return string(s)
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return string(s[:n]) + "..."
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's status code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*statusError)
	return ok && t.code == e.StatusCode
}

// Messages that follow the wording of Cosmos DB.
const (
	msgNotFound      = "Entity with the specified id does not exist in the system."
	msgConflict      = "Resource with specified id or name already exists."
	msgItemExists    = "Entity with the specified id already exists in the system."
	msgPrecondition  = "One of the specified pre-condition is not met."
	msgIndexingNone  = "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection"
	msgTTLValidRange = "Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
)

func badRequest(format string, args ...any) *Error {
	return &Error{StatusCode: statusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// withContext fills in the operation, container and item of an *Error and
// returns it as an error.
func withContext(err *Error, op, container, item string) error {
	err.Op, err.Container, err.ItemID = op, container, strings.Clone(item)
	return err
}
