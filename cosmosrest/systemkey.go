package cosmosrest

// A container made without a partition key (the legacy non-partitioned
// container) has, for the service's API versions since the partition key
// migration (2018-12-31, the version of the V3 SDKs), the system's
// partition key: its definition reads back as
//
//	"partitionKey":{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}
//
// and the SDKs then address its documents with the empty partition key
// ([]) where older clients send none. Older API versions (the legacy
// Python SDK's 2018-09-17) get no partitionKey at all, as from the service.

// systemKeyPath is the path of the system's partition key.
const systemKeyPath = "/_partitionKey"

// systemKeyJSON is the partitionKey of a container without one, for a
// client of an API version since the migration.
const systemKeyJSON = `,"partitionKey":{"paths":["` + systemKeyPath + `"],"kind":"Hash","systemKey":true}`

// systemKeyAPIVersion is the first API version that sees the system's
// partition key.
const systemKeyAPIVersion = "2018-12-31"

// seesSystemKey reports whether the request's client is told of the
// system's partition key (x-ms-version, an ISO date, at least
// systemKeyAPIVersion).
func (q *request) seesSystemKey() bool {
	return q.r.Header.Get("x-ms-version") >= systemKeyAPIVersion
}

// isSystemKey reports whether a body's partition key definition is the
// system's, as such a client sends back what it read: no partition key.
func isSystemKey(systemKey bool, paths []string) bool {
	return systemKey && len(paths) == 1 && paths[0] == systemKeyPath
}
