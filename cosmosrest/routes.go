package cosmosrest

import (
	"net/http"
	"slices"
	"strings"
)

// routes is the REST front's routing table: for each kind of target, the
// operations it serves, each with its handler and what a resource token
// needs for it. serve, the Allow header of a 405 and authorize all read
// it, so that what is served and what a token may do cannot drift apart.
// The rows of unsupported and unknown paths are empty: serve answers them
// itself, and authorize refuses every token on them.
var routes [tUnknown + 1]resourceRoutes

func init() {
	routes = [tUnknown + 1]resourceRoutes{
		tAccount: {
			anyContainer: true,
			ops: []operation{
				{method: "GET", serve: (*request).account},
				{token: denyToken("a resource token reads the account, nothing more")},
			},
		},
		tDatabases: keyOnly(feedOps((*request).listDatabases, (*request).queryDatabases, (*request).createDatabase)...),
		tDatabase: keyOnly(
			operation{method: "GET", serve: (*request).readDatabase},
			operation{method: "DELETE", serve: (*request).deleteDatabase},
		),
		tContainers: keyOnly(feedOps((*request).listContainers, (*request).queryContainers, (*request).createContainer)...),
		tContainer: {ops: []operation{
			{method: "GET", serve: (*request).readContainer},
			{method: "PUT", serve: (*request).replaceContainer, token: containerChange},
			{method: "DELETE", serve: (*request).deleteContainer, token: containerChange},
			{token: containerReadOnly},
		}},
		tDocuments: {
			docScope: func(s scope, _ target) string {
				if s.document != "" {
					return "the token's permission is on one document, not on the container's feed"
				}
				return ""
			},
			ops: []operation{
				{method: "GET", when: isChangeFeedRequest, serve: (*request).changeFeed, token: tokenRule{pk: true}},
				{method: "GET", serve: (*request).readFeed, token: tokenRule{pk: true}},
				// A plan reads no document.
				{method: "POST", when: isQueryPlanRequest, serve: (*request).queryPlan},
				{method: "POST", when: isQueryRequest, serve: (*request).queryDocuments, token: tokenRule{pk: true}},
				{method: "POST", when: isAtomicBatchRequest, serve: (*request).batch, token: tokenRule{write: true, pk: true}},
				// A bulk request: each operation names its partition key.
				{method: "POST", when: isBatchRequest, serve: (*request).bulk, token: tokenRule{write: true, check: bulkInScope}},
				{method: "POST", serve: (*request).createDocument, token: tokenRule{write: true, pk: true}},
				{token: denyToken("not a request on documents")},
			},
		},
		tDocument: {
			docScope: func(s scope, t target) string {
				if s.document != "" && s.document != t.id {
					return "the token's permission is on another document"
				}
				return ""
			},
			ops: []operation{
				{method: "GET", serve: (*request).readDocument, token: tokenRule{pk: true}},
				{method: "PUT", serve: (*request).replaceDocument, token: tokenRule{write: true, pk: true}},
				{method: "PATCH", serve: (*request).patchDocument, token: tokenRule{write: true, pk: true}},
				{method: "DELETE", serve: (*request).deleteDocument, token: tokenRule{write: true, pk: true}},
				{token: tokenRule{write: true, pk: true}},
			},
		},
		tPKRanges: pkRangeRoutes,
		tPKRange:  pkRangeRoutes,
		tOffers: keyOnly(
			operation{method: "GET", serve: (*request).listOffers},
			operation{method: "POST", when: isQueryRequest, serve: (*request).queryOffers},
			operation{method: "POST", serve: func(q *request) {
				q.unsupported("offers are made with their containers (x-ms-offer-throughput), not created alone")
			}},
		),
		tOffer: keyOnly(
			operation{method: "GET", serve: (*request).readOffer},
			operation{method: "PUT", serve: (*request).replaceOffer},
		),
		tConflicts: {ops: []operation{
			{method: "GET", serve: (*request).readConflicts},
			{method: "POST", when: isQueryRequest, serve: (*request).queryConflicts},
			{token: conflictsReadOnly},
		}},
		tConflict: {ops: []operation{
			{method: "GET", serve: (*request).conflict},
			{method: "DELETE", serve: (*request).conflict, token: conflictsReadOnly},
			{method: "POST", when: isQueryRequest},
			{token: conflictsReadOnly},
		}},
		tUsers:       keyOnly(feedOps((*request).listUsers, (*request).queryUsers, (*request).createUser)...),
		tUser:        keyOnly(itemOps((*request).readUser, (*request).replaceUser, (*request).deleteUser)...),
		tPermissions: keyOnly(feedOps((*request).listPermissions, (*request).queryPermissions, (*request).createPermission)...),
		tPermission:  keyOnly(itemOps((*request).readPermission, (*request).replacePermission, (*request).deletePermission)...),
		tSprocs:      scriptFeedRoutes,
		tSproc: {docScope: scriptsScope, ops: []operation{
			{method: "GET", serve: (*request).readScript},
			// Running a procedure needs any permission on the container,
			// and under Read its writes are refused (sprocexec.go); a
			// permission scoped to a partition key, the request's partition
			// (query headers or not: they do not make it a read).
			{method: "POST", serve: (*request).executeSproc, token: tokenRule{pk: true}},
			{method: "PUT", serve: (*request).replaceScript, token: scriptsChange},
			{method: "DELETE", serve: (*request).deleteScript, token: scriptsChange},
			{token: scriptsChange},
		}},
		tTriggers: scriptFeedRoutes,
		tTrigger:  scriptItemRoutes,
		tUDFs:     scriptFeedRoutes,
		tUDF:      scriptItemRoutes,
		tPartitionDelete: {docScope: func(s scope, _ target) string {
			if s.document != "" {
				return "the token's permission is on one document, not on its partition"
			}
			return ""
		}, ops: []operation{
			{method: "POST", serve: (*request).deletePartition, token: tokenRule{write: true, pk: true}},
			{token: tokenRule{write: true, pk: true}},
		}},
	}
	for k := range routes {
		routes[k].allow = routes[k].allowed()
	}
}

// resourceRoutes is how one kind of target is served.
type resourceRoutes struct {
	// ops are the kind's operations, the first that matches a request
	// taking it. An operation without a handler is not served (405): it
	// is there for what a resource token needs before that answer.
	ops []operation
	// anyContainer is set when a resource token reaches the target
	// whatever its permission's container (the account).
	anyContainer bool
	// docScope says why a permission on one document does not reach the
	// target t ("" when it does); nil when it always does.
	docScope func(s scope, t target) string
	// allow is the Allow header of a 405: the methods ops serve.
	allow string
}

// operation is one way of serving a kind of target.
type operation struct {
	method string                   // "" for every method
	when   func(*http.Request) bool // nil for every request of method
	serve  func(*request)           // nil: not served, answered 405
	token  tokenRule                // what a resource token needs
}

// tokenRule is what a resource token's permission needs for an operation.
type tokenRule struct {
	deny  string                            // why a token never may ("" when it may)
	check func(s scope, body []byte) string // why the scope does not reach the request ("" when it does), checked first
	write bool                              // the permission must be All
	pk    bool                              // a permission on a partition key must be on the request's
}

// pick returns the operation that takes r: its handler is nil when the
// kind does not serve r. Every row but the empty ones ends with an
// operation that takes every request; in an empty row, pick's operation
// refuses every token.
func (rr *resourceRoutes) pick(r *http.Request) operation {
	for _, op := range rr.ops {
		if (op.method == "" || op.method == r.Method) && (op.when == nil || op.when(r)) {
			return op
		}
	}
	return operation{token: noToken}
}

// allowed lists the methods the row serves, in its order.
func (rr *resourceRoutes) allowed() string {
	var ms []string
	for _, op := range rr.ops {
		if op.serve != nil && !slices.Contains(ms, op.method) {
			ms = append(ms, op.method)
		}
	}
	return strings.Join(ms, ", ")
}

// noToken is the rule of what only the master key reaches.
var noToken = denyToken("a resource token reaches only documents of its permission's container")

func denyToken(why string) tokenRule { return tokenRule{deny: why} }

var (
	containerReadOnly = denyToken("a resource token does not change or delete a container")
	// containerChange is the rule of replacing or deleting a container:
	// All on the whole container, as the service allows.
	containerChange = tokenRule{write: true, check: func(s scope, _ []byte) string {
		switch {
		case s.pk != nil:
			return "the token's permission is on the partition key " + s.pk.String() + ": replacing or deleting the container needs a permission on the whole container"
		case s.document != "":
			return "the token's permission is on one document: replacing or deleting the container needs a permission on the whole container"
		}
		return ""
	}}
	conflictsReadOnly = denyToken("a resource token reads conflicts, nothing more")
	// scriptsChange is the rule of changing scripts: they run in every
	// partition, so whoever changes them reaches every partition, and a
	// permission on one does not.
	scriptsChange = tokenRule{write: true, check: func(s scope, _ []byte) string {
		if s.pk != nil {
			return "the token's permission is on the partition key " + s.pk.String() + ", and a container's scripts run in all of its partitions: changing them needs a permission on the whole container"
		}
		return ""
	}}
)

// keyOnly is the row of a kind only the master key reaches.
func keyOnly(ops ...operation) resourceRoutes {
	for i := range ops {
		ops[i].token = noToken
	}
	return resourceRoutes{ops: append(ops, operation{token: noToken})}
}

// feedOps are the operations of a feed: its list, a query of it and a
// create.
func feedOps(list, query, create func(*request)) []operation {
	return []operation{
		{method: "GET", serve: list},
		{method: "POST", when: isQueryRequest, serve: query},
		{method: "POST", serve: create},
	}
}

// itemOps are the operations of an item of a feed: its read, replace and
// delete.
func itemOps(read, replace, del func(*request)) []operation {
	return []operation{
		{method: "GET", serve: read},
		{method: "PUT", serve: replace},
		{method: "DELETE", serve: del},
	}
}

var pkRangeRoutes = resourceRoutes{ops: []operation{
	{method: "GET", serve: (*request).partitionKeyRanges},
	{token: containerReadOnly},
}}

// Reading scripts needs any permission on the container, changing them
// All on the whole container.
var (
	scriptFeedRoutes = resourceRoutes{docScope: scriptsScope, ops: []operation{
		{method: "GET", serve: (*request).listScripts},
		{method: "POST", when: isQueryRequest, serve: (*request).queryScripts},
		{method: "POST", serve: (*request).createScript, token: scriptsChange},
		{token: scriptsChange},
	}}
	scriptItemRoutes = resourceRoutes{docScope: scriptsScope, ops: []operation{
		{method: "GET", serve: (*request).readScript},
		{method: "PUT", serve: (*request).replaceScript, token: scriptsChange},
		{method: "DELETE", serve: (*request).deleteScript, token: scriptsChange},
		{method: "POST", when: isQueryRequest},
		{token: scriptsChange},
	}}
)

func scriptsScope(s scope, _ target) string {
	if s.document != "" {
		return "the token's permission is on one document, not on the container's scripts"
	}
	return ""
}

// bulkInScope says why a bulk body reaches beyond a permission on one
// partition key.
func bulkInScope(s scope, body []byte) string {
	if s.pk == nil {
		return ""
	}
	return bulkOutsidePK(body, *s.pk)
}

// isChangeFeedRequest reports whether a GET of documents reads the change
// feed (A-IM).
func isChangeFeedRequest(r *http.Request) bool { return r.Header.Get("A-IM") != "" }

// isQueryPlanRequest reports whether a POST to documents asks for a
// query's plan.
func isQueryPlanRequest(r *http.Request) bool {
	return headerTrue(r.Header.Get("x-ms-cosmos-is-query-plan-request"))
}

// isBatchRequest reports whether a POST to documents is a batch or a bulk
// request.
func isBatchRequest(r *http.Request) bool {
	return headerTrue(r.Header.Get("x-ms-cosmos-is-batch-request"))
}

// isAtomicBatchRequest reports whether a POST to documents is a
// transactional batch.
func isAtomicBatchRequest(r *http.Request) bool {
	return isBatchRequest(r) && headerTrue(r.Header.Get("x-ms-cosmos-batch-atomic"))
}
