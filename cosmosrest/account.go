package cosmosrest

import (
	"encoding/json"
	"net/http"
)

// region is the one region the account has, named as the emulator names
// its own.
const region = "South Central US"

// queryEngineConfiguration is the account's query limits, a JSON text
// inside the JSON (as the service sends it); the .NET and Python SDKs read
// it.
const queryEngineConfiguration = `{"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5,"maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":500,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"sqlAllowTop":true,"maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,"sqlDisableQueryILOptimization":false,"sqlDisableFilterPlanOptimization":false}`

type location struct {
	Name     string `json:"name"`
	Endpoint string `json:"databaseAccountEndpoint"`
}

type replicationPolicy struct {
	AsyncReplication  bool `json:"asyncReplication,omitempty"`
	MinReplicaSetSize int  `json:"minReplicaSetSize"`
	MaxReplicaSetSize int  `json:"maxReplicasetSize"`
}

type accountBody struct {
	Self                     string            `json:"_self"`
	ID                       string            `json:"id"`
	RID                      string            `json:"_rid"`
	Media                    string            `json:"media"`
	Addresses                string            `json:"addresses"`
	DBs                      string            `json:"_dbs"`
	Writable                 []location        `json:"writableLocations"`
	Readable                 []location        `json:"readableLocations"`
	MultipleWrites           bool              `json:"enableMultipleWriteLocations"`
	UserReplication          replicationPolicy `json:"userReplicationPolicy"`
	UserConsistency          map[string]string `json:"userConsistencyPolicy"`
	SystemReplication        replicationPolicy `json:"systemReplicationPolicy"`
	ReadPolicy               map[string]int    `json:"readPolicy"`
	QueryEngineConfiguration string            `json:"queryEngineConfiguration"`
}

// account answers GET /: the database account, whose one region's
// endpoint is the address the request came to, so that the SDKs, which
// send every later request to the endpoints the account names, keep
// talking to this server under the name the client used. Its id is not
// "localhost" (the emulator's): @azure/cosmos ignores the locations of an
// account of that id and reads the account again before every operation
// (twice), where with these it reads it once and then uses the endpoint
// the account names, which is the one it was given.
func (q *request) account() {
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	host := q.r.Host
	if host == "" {
		host = "localhost"
	}
	loc := []location{{Name: region, Endpoint: scheme + "://" + host + "/"}}
	b, _ := json.Marshal(accountBody{
		ID: "lethe", RID: "lethe",
		Media: "//media/", Addresses: "//addresses/", DBs: "//dbs/",
		Writable: loc, Readable: loc,
		UserReplication:          replicationPolicy{MinReplicaSetSize: 1, MaxReplicaSetSize: 4},
		UserConsistency:          map[string]string{"defaultConsistencyLevel": "Session"},
		SystemReplication:        replicationPolicy{MinReplicaSetSize: 1, MaxReplicaSetSize: 4},
		ReadPolicy:               map[string]int{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		QueryEngineConfiguration: queryEngineConfiguration,
	})
	hdr := q.w.Header()
	hdr.Set("x-ms-max-media-storage-usage-mb", "10240")
	hdr.Set("x-ms-media-storage-usage-mb", "0")
	hdr.Set("x-ms-databaseaccount-consumed-mb", "0")
	hdr.Set("x-ms-databaseaccount-reserved-mb", "0")
	hdr.Set("x-ms-databaseaccount-provisioned-mb", "0")
	q.reply(http.StatusOK, b, 0)
}
