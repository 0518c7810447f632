package cosmosrest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/query"
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
	msgBadToken       = "Invalid Continuation Token" // the SDKs' tests look for it
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
	msgEntityExists = "Entity with the specified id already exists in the system."
	// msgUniqueViolation is a write that breaks a unique key policy's.
	msgUniqueViolation = "Unique index constraint violation."
	msgResourceExists  = "Resource with specified id or name already exists."
	// 412
	msgPrecondition = "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed"
	// 413, as the gateway writes it (then "\r\nActivityId: …"): the JS
	// SDK's bulk tests look for it with the line's end
	msgRequestTooLarge = `Message: {"Errors":["Request size is too large"]}`
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
// is for something in the missing resource); activity is the response's
// x-ms-activity-id, which the message of a bad query names.
func serviceError(le *lethe.Error, notFoundSub int, activity string) apiError {
	e := apiError{status: le.StatusCode}
	item := le.ItemID != ""
	switch le.StatusCode {
	case http.StatusBadRequest:
		var qe *query.Error
		if errors.As(le.Err, &qe) && qe.Code != "" {
			e.msg = queryErrorMessage(qe, activity)
			break
		}
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
		switch {
		case le.Message == msgUniqueViolation: // lethe's is the service's
			e.msg = msgUniqueViolation
		case item:
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
		e.msg = tooLargeMessage(activity, le.Message)
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
	case strings.HasPrefix(m, "the continuation token "):
		return withDetail(msgBadToken, m), 0
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

// queryErrorMessage is the message of a 400 for the bad query qe, as
// Cosmos DB's gateway writes it: "Message: " and the query engine's list
// of errors, as JSON, then a line of the response's ActivityId (activity;
// none when "") and, where lethe's own text says more than the service's
// (the service's "unexpected end-of-file" does not say what was expected
// there), lethe's explanation with its line and column:
//
//	Message: {"errors":[{"severity":"Error","location":{"start":21,"end":21},"code":"SC1002","message":"Syntax error, unexpected end-of-file."}]}
//	ActivityId: 6c0a…, lethe: 1:22: expected an expression, found end of query
//
// The location counts UTF-16 code units of the query text, from 0; an
// error without one (a parameter's value) has no location.
func queryErrorMessage(qe *query.Error, activity string) string {
	type location struct {
		Start int `json:"start"`
		End   int `json:"end"`
	}
	type engineError struct {
		Severity string    `json:"severity"`
		Location *location `json:"location,omitempty"`
		Code     string    `json:"code"`
		Message  string    `json:"message"`
	}
	one := engineError{Severity: "Error", Code: qe.Code, Message: qe.ServiceMessage()}
	if qe.Line > 0 {
		one.Location = &location{qe.Start, qe.End}
	}
	var b bytes.Buffer
	b.WriteString("Message: ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Errors []engineError `json:"errors"`
	}{[]engineError{one}})
	b.Truncate(b.Len() - 1) // Encode's newline
	note := qe.Error()
	if note == qe.ServiceMessage() {
		note = ""
	}
	switch {
	case activity != "" && note != "":
		b.WriteString("\r\nActivityId: " + activity + ", lethe: " + note)
	case activity != "":
		b.WriteString("\r\nActivityId: " + activity)
	case note != "":
		b.WriteString("\r\nlethe: " + note)
	}
	return b.String()
}

// tooLargeMessage is the message of a 413, as the gateway writes it: the
// service's errors, then a line of the response's ActivityId (activity)
// and lethe's explanation (why):
//
//	Message: {"Errors":["Request size is too large"]}
//	ActivityId: 6c0a…, lethe: the item is 2097200 bytes, over the limit of 2097152
func tooLargeMessage(activity, why string) string {
	return msgRequestTooLarge + "\r\nActivityId: " + activity + ", lethe: " + why
}

// msgQueryPlanFailed begins the message of a query plan request's 400, as
// the gateway's begins (before the query engine's Message: ...).
const msgQueryPlanFailed = "Gateway Failed to Retrieve Query Plan: "

// badQuery answers 400 when err is a bad query (a *query.Error): its
// message is queryErrorMessage's, after prefix. It reports whether it
// answered.
func (q *request) badQuery(err error, prefix string) bool {
	var qe *query.Error
	if !errors.As(err, &qe) {
		return false
	}
	msg := err.Error()
	if qe.Code != "" {
		msg = prefix + queryErrorMessage(qe, responseHeader(q.w.Header(), "x-ms-activity-id"))
	}
	q.answerError(http.StatusBadRequest, msg)
	return true
}
