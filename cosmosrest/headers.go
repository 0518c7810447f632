package cosmosrest

import (
	"net/http"
	"strings"
)

// serviceNames are the response header names lethe sends that the service
// writes in lower case: every x-ms-* name, etag and lsn. HTTP/2 lower-cases
// every name itself; HTTP/1.1 writes a name as the header map holds it,
// and http.Header.Set holds it in Go's canonical form (X-Ms-Continuation),
// which clients that copy headers into a plain map do not find (the legacy
// Python SDK then stops paging after one page). Standard names
// (Content-Type, Date, ...) keep Go's form, which is the service's.
var serviceNames = []string{
	"etag",
	"lsn",
	"x-ms-activity-id",
	"x-ms-alt-content-path",
	"x-ms-content-path",
	"x-ms-continuation",
	"x-ms-cosmos-index-utilization",
	"x-ms-databaseaccount-consumed-mb",
	"x-ms-databaseaccount-provisioned-mb",
	"x-ms-databaseaccount-reserved-mb",
	"x-ms-documentdb-collection-index-transformation-progress",
	"x-ms-documentdb-is-upsert",
	"x-ms-documentdb-partitionkeyrangeid",
	"x-ms-documentdb-query-metrics",
	"x-ms-documentdb-script-log-results",
	"x-ms-gatewayversion",
	"x-ms-item-count",
	"x-ms-lethe-fault",
	"x-ms-lethe-reaper",
	"x-ms-max-media-storage-usage-mb",
	"x-ms-media-storage-usage-mb",
	"x-ms-request-charge",
	"x-ms-resource-quota",
	"x-ms-resource-usage",
	"x-ms-retry-after-ms",
	"x-ms-session-token",
	"x-ms-substatus",
}

// wireNames maps the canonical form of each of serviceNames onto the name
// itself, and canonicalNames back: computed once, so that renaming a
// response's headers allocates nothing.
var wireNames, canonicalNames = func() (map[string]string, map[string]string) {
	wire := make(map[string]string, len(serviceNames))
	canon := make(map[string]string, len(serviceNames))
	for _, n := range serviceNames {
		c := http.CanonicalHeaderKey(n)
		wire[c], canon[n] = n, c
	}
	return wire, canon
}()

// writeHeader writes a response's status with its header names as the
// service sends them (serviceNames in lower case; an x-ms-* name missing
// from the list too, at the cost of an allocation). Every response of the
// front has its status written here. The server copies the header map when
// the status is written, so writeHeader then gives the map back its
// canonical names: code that reads it after the handler (http.Header.Get,
// as cmd/lethe's request log does) finds them as before.
func writeHeader(w http.ResponseWriter, status int) {
	hdr := w.Header()
	for k, v := range hdr {
		n, ok := wireNames[k]
		if !ok {
			if !strings.HasPrefix(k, "X-Ms-") {
				continue
			}
			n = strings.ToLower(k)
		}
		delete(hdr, k)
		hdr[n] = v
	}
	w.WriteHeader(status)
	for k, v := range hdr {
		c, ok := canonicalNames[k]
		if !ok {
			if !strings.HasPrefix(k, "x-ms-") {
				continue
			}
			c = http.CanonicalHeaderKey(k)
		}
		delete(hdr, k)
		hdr[c] = v
	}
}
