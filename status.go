package lethe

import "strconv"

// The HTTP status codes lethe reports, as Cosmos DB does. They are defined
// here rather than taken from net/http so that a program importing lethe does
// not pull in the HTTP stack.
const (
	statusOK                    = 200
	statusCreated               = 201
	statusNoContent             = 204
	statusBadRequest            = 400
	statusNotFound              = 404
	statusRequestTimeout        = 408
	statusConflict              = 409
	statusPreconditionFailed    = 412
	statusRequestEntityTooLarge = 413
	statusFailedDependency      = 424
	statusTooManyRequests       = 429
	statusServiceUnavailable    = 503
)

// statusText is the reason phrase of a status code, in lower case.
func statusText(code int) string {
	switch code {
	case statusOK:
		return "ok"
	case statusCreated:
		return "created"
	case statusNoContent:
		return "no content"
	case statusBadRequest:
		return "bad request"
	case statusNotFound:
		return "not found"
	case statusRequestTimeout:
		return "request timeout"
	case statusConflict:
		return "conflict"
	case statusPreconditionFailed:
		return "precondition failed"
	case statusRequestEntityTooLarge:
		return "request entity too large"
	case statusFailedDependency:
		return "failed dependency"
	case statusTooManyRequests:
		return "too many requests"
	case statusServiceUnavailable:
		return "service unavailable"
	}
	return "status " + strconv.Itoa(code)
}
