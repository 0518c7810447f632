package lethe

import (
	"context"
	"encoding/json"
	"errors"
)

// PartitionDeleteResponse tells what DeleteAllItemsByPartitionKey did.
type PartitionDeleteResponse struct {
	Deleted       int     // the items it deleted
	RequestCharge float64 // request units it cost: the query for the items and each delete
}

// DeleteAllItemsByPartitionKey deletes every item live in the logical
// partition pk (a full partition key value) when it begins, as Cosmos DB's
// "delete items by partition key value" does: once it returns, reads and
// queries find none of them (an item written to the partition meanwhile
// may stay). Each is deleted through the write path as DeleteItem deletes it
// (the change feed, indexes and log see each delete; an item deleted or
// expired meanwhile is passed over), and charged as DeleteItem charges it.
//
// Cosmos DB answers first and deletes in the background with at most a
// tenth of the container's throughput, hiding the items at once; lethe
// deletes before it answers. On a container whose budget runs out it fails
// with ErrTooManyRequests, keeping the deletes made: calling it again goes
// on where it stopped. It fails as DeleteItem does otherwise, and with
// ErrBadRequest for a key with fewer values than the container's paths.
func (c *Container) DeleteAllItemsByPartitionKey(ctx context.Context, pk PartitionKey) (PartitionDeleteResponse, error) {
	const op = "DeleteAllItemsByPartitionKey"
	var resp PartitionDeleteResponse
	if err := c.check(ctx, op, ""); err != nil {
		return resp, err
	}
	if err := c.pkPaths.check(pk, false); err != nil {
		r, err := c.fail(op, "", err)
		resp.RequestCharge = r.RequestCharge
		return resp, err
	}
	ids, charge, err := c.partitionIDs(ctx, pk)
	resp.RequestCharge += charge
	if err != nil {
		return resp, err
	}
	for _, id := range ids {
		r, err := c.DeleteItem(ctx, pk, id, nil)
		resp.RequestCharge += r.RequestCharge
		switch {
		case err == nil:
			resp.Deleted++
		case !errors.Is(err, ErrNotFound) || c.deleted.Load():
			return resp, err
		}
	}
	return resp, nil
}

// partitionIDs returns the ids of the live items of the partition pk, and
// what the query for them cost.
func (c *Container) partitionIDs(ctx context.Context, pk PartitionKey) (ids []string, charge float64, err error) {
	p := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", pk, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		charge += page.RequestCharge
		if err != nil {
			return nil, charge, err
		}
		for _, it := range page.Items {
			var id string
			if err := json.Unmarshal(it, &id); err != nil {
				return nil, charge, err
			}
			ids = append(ids, id)
		}
	}
	return ids, charge, nil
}
