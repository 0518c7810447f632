package cosmosrest

import "net/http"

// deletePartition answers POST dbs/{db}/colls/{coll}/operations/partitionkeydelete,
// the SDKs' delete of every item of one logical partition
// (deleteAllItemsForPartitionKey, DeleteAllItemsByPartitionKeyStreamAsync):
// lethe deletes them before it answers (lethe.Container.DeleteAllItemsByPartitionKey),
// where Cosmos DB answers at once and deletes in the background; either way
// the partition's items are gone from reads and queries once the answer
// arrives. The partition key header is required, as for a point operation.
func (q *request) deletePartition() {
	_, c, p, ok := q.documentContainer()
	if !ok {
		return
	}
	pk, ok := q.partitionKey(p, false)
	if !ok {
		return
	}
	resp, err := c.DeleteAllItemsByPartitionKey(q.ctx(), pk)
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	q.reply(http.StatusOK, nil, resp.RequestCharge)
}
