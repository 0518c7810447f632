package cosmosrest

import (
	"net/http"
	"strings"

	"github.com/lethedb/lethe"
)

// The service's messages, as Cosmos DB's gateway writes them in the body of
// an error (without the diagnostics it appends: ActivityId, Request URI,
// RequestStats). The SDKs and their tests look for these texts; see the
// package documentation, "Errors", for how lethe adds to them.
const (
	// 400
	msgPKMismatch = "PartitionKey extracted from document doesn't match the one specified in the header. " +
		"Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value"
	msgPKMissing      = "PartitionKey value must be supplied for this operation."
	msgPKDefinition   = "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document."
	msgIDMissing      = "The input content is invalid because the required properties - 'id; ' - are missing"
	msgPayloadInvalid = "The request payload is invalid. Ensure to provide a valid request payload."
	// 401
	msgAuthMissing = "Required Header authorization is missing. Ensure a valid Authorization token is passed."
	msgBadMAC      = "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. " +
		"For more info: https://aka.ms/cosmosdb-tsg-mac-signature. Server used the following payload to sign: '%s'"
	// 403
	msgTokenTime = "The authorization token is not valid at the current time. Please create another token and retry " +
		"(token start time: %s, token expiry time: %s, current server time: %s)."
	// 404
	msgEntityNotFound   = "Entity with the specified id does not exist in the system. More info: https://aka.ms/cosmosdb-tsg-not-found"
	msgResourceNotFound = "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found"
	msgOwnerNotFound    = "Owner resource does not exist"
	// 405
	msgMethodNotAllowed = "The requested verb is not supported."
	// 408
	msgRequestTimeout = "Request timed out."
	// 409
	msgEntityExists   = "Entity with the specified id already exists in the system."
	msgResourceExists = "Resource with specified id or name already exists."
	// 412
	msgPrecondition = "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed"
	// 413
	msgRequestTooLarge = "Request size is too large"
	// 429
	msgRequestRateLarge = "Request rate is large. More Request Units may be needed, so no changes were made. " +
		"Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429"
	// 500
	msgInternal = "Unknown server error occurred when processing this request."
	// 503
	msgUnavailable = "Service is currently unavailable, please retry after a while. If this problem persists please contact support."
)

// Substatus codes of the service's that the front answers.
const (
	subPKMismatch = 1001 // 400: the partition key does not match the document's or the container's
)

// withDetail is a message of the service's followed by lethe's explanation,
// in parentheses after "lethe: ", or the service's message alone when
// detail is "".
func withDetail(service, detail string) string {
	if detail == "" {
		return service
	}
	return service + " (lethe: " + detail + ")"
}

// serviceError is how the front answers a failed lethe call whose error is
// le: the service's status, substatus and message for what went wrong.
// notFoundSub is the substatus of a 404 (subOwnerNotFound when the request
// is for something in the missing resource).
func serviceError(le *lethe.Error, notFoundSub int) opError {
	e := opError{status: le.StatusCode}
	item := le.ItemID != ""
	switch le.StatusCode {
	case http.StatusBadRequest:
		e.msg, e.sub = badRequestMessage(le)
	case http.StatusNotFound:
		e.sub = notFoundSub
		switch {
		case notFoundSub == subOwnerNotFound:
			e.msg = msgOwnerNotFound
		case item:
			e.msg = msgEntityNotFound
		default:
			e.msg = msgResourceNotFound
		}
	case http.StatusConflict:
		e.msg = msgResourceExists
		if item {
			e.msg = msgEntityExists
		}
	case http.StatusPreconditionFailed:
		e.msg = msgPrecondition
		if detail, ok := strings.CutSuffix(le.Message, ": One of the specified pre-condition is not met."); ok {
			// a patch's condition, which a reader of the service's
			// text would look for in If-Match
			e.msg = withDetail(msgPrecondition, detail)
		}
	case http.StatusRequestEntityTooLarge:
		e.msg = withDetail(msgRequestTooLarge, le.Message)
	case http.StatusTooManyRequests:
		e.msg = msgRequestRateLarge
	case http.StatusServiceUnavailable:
		e.msg = withDetail(msgUnavailable, strings.TrimPrefix(le.Error(), "lethe: "))
	default:
		e.msg = le.Error()
	}
	return e
}

// badRequestMessage is the message and substatus of a 400 from lethe. The
// library writes the service's own messages as the service does,
// capitalised (a time to live, a patch operation, an ORDER BY without its
// composite index), and its own in lower case: those the service has a
// message for get it, with lethe's explanation after it where the
// explanation says more; the rest are lethe's own.
func badRequestMessage(le *lethe.Error) (string, int) {
	m := le.Message
	switch {
	case strings.HasPrefix(m, "PartitionKey extracted from document"):
		return msgPKMismatch, subPKMismatch
	case m != "" && 'A' <= m[0] && m[0] <= 'Z':
		return m, 0
	case m == "the item has no 'id' property":
		return msgIDMissing, 0
	case strings.HasPrefix(m, "invalid JSON"), strings.HasPrefix(m, "the item must be a JSON object"),
		strings.HasPrefix(m, "the item is empty"), strings.HasPrefix(m, "the item has the property"),
		strings.HasPrefix(m, "the property 'id' must be a string"):
		return withDetail(msgPayloadInvalid, m), 0
	case strings.HasPrefix(m, "the partition key ") && (strings.Contains(m, " components, ") || strings.Contains(m, "must be empty")),
		strings.HasPrefix(m, "the container is partitioned by"), strings.HasPrefix(m, "the container is not partitioned"):
		return withDetail(msgPKDefinition, m), subPKMismatch
	}
	return le.Error(), 0
}

// notFoundMessage is the service's message of a 404 with substatus sub for
// a database, container or other resource the front looks up by name.
func notFoundMessage(sub int) string {
	if sub == subOwnerNotFound {
		return msgOwnerNotFound
	}
	return msgResourceNotFound
}

// bodyMessage is the service's message for a request body that is not the
// JSON object with an "id" that a create takes: err is the body's decoding
// error, nil when only the id is missing; want says what lethe expected.
func bodyMessage(err error, want string) string {
	if err != nil {
		return withDetail(msgPayloadInvalid, want)
	}
	return msgIDMissing
}

// msgTTLValidRange ends the service's message for an invalid ttl or
// defaultTtl.
const msgTTLValidRange = "Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
