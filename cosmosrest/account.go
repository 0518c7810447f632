package cosmosrest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/lethedb/lethe/internal/query"
)

// region is the one region the account has, named as the emulator names
// its own.
const region = "South Central US"

// queryEngineConfiguration is the account's query limits, a JSON text
// inside the JSON (as the service sends it); the .NET and Python SDKs read
// it. The query length and JOINs are those the parser enforces.
var queryEngineConfiguration = fmt.Sprintf(`{"maxSqlQueryInputLength":%d,"maxJoinsPerSqlQuery":%d,"maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":500,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"sqlAllowTop":true,"maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,"sqlDisableQueryILOptimization":false,"sqlDisableFilterPlanOptimization":false}`, query.MaxQueryLen, query.MaxJoins)

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
	UserConsistency          any               `json:"userConsistencyPolicy"`
	SystemReplication        replicationPolicy `json:"systemReplicationPolicy"`
	ReadPolicy               map[string]int    `json:"readPolicy"`
	QueryEngineConfiguration string            `json:"queryEngineConfiguration"`
}

// account answers GET /: the database account, whose one region's
// endpoint is where the SDKs send every later request.
//
// The emulator advertises https://127.0.0.1:8081/ whatever name the client
// used, and azcosmos's tests expect that; the front does the same for a
// request to "localhost", naming the loopback address the connection
// really arrived at (127.0.0.1, or ::1), so that the advertised endpoint
// always reaches this server. A request to any other host (an IP address,
// a machine's name) gets that host back, so remote clients keep working.
// The certificate names both localhost and the loopback addresses.
//
// The account's id is not "localhost" (the emulator's): @azure/cosmos
// ignores the locations of an account of that id and reads the account
// again before every operation (twice), where with these it reads it once
// and then uses the endpoint the account names.
//
// The default consistency is Strong: a lethe store is one copy in one
// process, and every read sees every write acknowledged before it. A
// region of an Account names the account's regions, its write region and
// its consistency policy instead.
func (q *request) account() {
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	loc := []location{{Name: region, Endpoint: scheme + "://" + advertisedHost(q.r) + "/"}}
	writable, readable := loc, loc
	var consistency any = map[string]string{"defaultConsistencyLevel": "Strong"}
	if n := q.h.region; n != nil {
		writable, readable = n.acct.locations(q.r, scheme)
		consistency = n.acct.consistencyPolicy()
	}
	b, _ := json.Marshal(accountBody{
		ID: "lethe", RID: "lethe",
		Media: "//media/", Addresses: "//addresses/", DBs: "//dbs/",
		Writable: writable, Readable: readable, MultipleWrites: q.h.region != nil && q.h.region.acct.multi,
		UserReplication:          replicationPolicy{MinReplicaSetSize: 1, MaxReplicaSetSize: 4},
		UserConsistency:          consistency,
		SystemReplication:        replicationPolicy{MinReplicaSetSize: 1, MaxReplicaSetSize: 4},
		ReadPolicy:               map[string]int{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		QueryEngineConfiguration: queryEngineConfiguration,
	})
	hdr := q.w.Header()
	setHeader(hdr, "x-ms-max-media-storage-usage-mb", "10240")
	setHeader(hdr, "x-ms-media-storage-usage-mb", "0")
	setHeader(hdr, "x-ms-databaseaccount-consumed-mb", "0")
	setHeader(hdr, "x-ms-databaseaccount-reserved-mb", "0")
	setHeader(hdr, "x-ms-databaseaccount-provisioned-mb", "0")
	q.reply(http.StatusOK, b, 0)
}

// advertisedHost is the host (and port) that the account names as its
// endpoint for request r: r's Host, but for "localhost" the loopback
// address of the connection it came on.
func advertisedHost(r *http.Request) string {
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	if !strings.EqualFold(name, "localhost") {
		return host
	}
	ip := net.IPv4(127, 0, 0, 1)
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && a.IP.IsLoopback() {
		ip = a.IP
	}
	if port == "" {
		if ip.To4() == nil {
			return "[" + ip.String() + "]"
		}
		return ip.String()
	}
	return net.JoinHostPort(ip.String(), port)
}

// userConsistencyPolicy is an account's consistency policy as the
// account resource names it.
type userConsistencyPolicy struct {
	DefaultConsistencyLevel string `json:"defaultConsistencyLevel"`
	MaxStalenessPrefix      int    `json:"maxStalenessPrefix"`
	MaxIntervalInSeconds    int    `json:"maxIntervalInSeconds"`
}

// consistencyPolicy returns a's consistency policy for its account
// resource.
func (a *Account) consistencyPolicy() userConsistencyPolicy {
	return userConsistencyPolicy{DefaultConsistencyLevel: a.level, MaxStalenessPrefix: a.cfg.MaxStalenessPrefix, MaxIntervalInSeconds: a.cfg.MaxIntervalInSeconds}
}
