package cosmosrest

import "net/http"

// Response header names are set as the service writes them: every x-ms-*
// name, etag and lsn in lower case. HTTP/2 lower-cases every name itself;
// HTTP/1.1 writes a name as the header map holds it, and http.Header.Set
// would hold it in Go's canonical form (X-Ms-Continuation), which clients
// that copy headers into a plain map do not find (the legacy Python SDK
// then stops paging after one page). Standard names (Content-Type, Date,
// ...) keep Go's form, which is the service's, and are set with
// http.Header.Set.

// setHeader sets the response header name, given as the service writes it,
// to v: the header map holds name as it is, which http.Header.Set would
// canonicalize (at the cost of an allocation) and http.Header.Get does
// not find (read it back with responseHeader).
func setHeader(h http.Header, name, v string) {
	h[name] = []string{v}
}

// responseHeader returns the value of the response header name that
// setHeader set, "" if none.
func responseHeader(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
