package cosmosrest

import (
	"net/http"
)

// The conflicts feed of a container holds the writes that multi-region
// writes could not reconcile. A lethe account has one region, so no write
// ever conflicts: the feed is empty, as the emulator's is, and a conflict
// read or deleted by id does not exist. The container must exist (404
// with substatus 1003 otherwise), and a query must be a valid query.

// readConflicts answers GET on a container's conflicts feed.
func (q *request) readConflicts() {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	if _, ok := q.maxItemCount(); !ok {
		return
	}
	q.replyFeed(ridString(containerRID(db.id, c.ID())), "Conflicts", nil, "", 1)
}

// queryConflicts answers a query over a container's conflicts: lethe's
// query engine over no conflicts.
func (q *request) queryConflicts() {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	q.metaQuery(ridString(containerRID(db.id, c.ID())), "Conflicts", nil)
}

// conflict answers a read or delete of one conflict: there is none. A
// delete on a partitioned container needs the conflict's partition key
// (x-ms-documentdb-partitionkey), as the service's does: 400 without.
func (q *request) conflict() {
	if q.r.Method == http.MethodDelete {
		_, _, p, ok := q.containerProps(subOwnerNotFound)
		if ok {
			_, ok = q.partitionKey(p, false)
		}
		if !ok {
			return
		}
	} else if _, c := q.container(subOwnerNotFound); c == nil {
		return
	}
	apiError{status: http.StatusNotFound, msg: msgEntityNotFound, charge: 1}.write(q.w)
}
