package lethe

// Request charges, in request units (RU). This table is the only place where
// lethe prices an operation. It follows the shape Cosmos DB publishes: a point
// read of an item up to 1 KB costs 1 RU and of 100 KB 10 RU; an insert of 1 KB
// about 5.5 RU and a replace twice that; a delete like an insert; a query a base
// charge plus a share per item examined and per item returned; a failed request
// a small fixed charge. Charges are kept in milli-RU so that budgets add up
// exactly; they depend only on the operation and the item's size (not counting
// the ttl property: time to live costs nothing, and checking expiry is free).
//
//	operation                          charge (k = size in KB, rounded up, at least 1)
//	ReadItem                           1 + (k-1)/11
//	CreateItem, UpsertItem (created)   5.5 + (k-1)/2
//	DeleteItem, a purge by the reaper  5.5 + (k-1)/2
//	ReplaceItem, UpsertItem (replaced) 11 + (k-1)
//	a query page                       2.3 + 0.01 per item examined + 0.05 per item returned
//	any failure (400, 404, 409, ...)   1.24
const (
	chargeFailure       = 1240 // milli-RU
	chargeQueryBase     = 2300
	chargeQueryExamined = 10
	chargeQueryReturned = 50
)

type opKind uint8

const (
	opRead opKind = iota
	opCreate
	opReplace
	opDelete
)

// charge returns the charge, in milli-RU, of a successful operation on an
// item whose charged size is size bytes.
func charge(op opKind, size int) int64 {
	k := int64(1)
	if size > 1024 {
		k = (int64(size) + 1023) / 1024
	}
	switch op {
	case opRead:
		return 1000 + (k-1)*1000/11
	case opReplace:
		return 11000 + (k-1)*1000
	default: // create, delete
		return 5500 + (k-1)*500
	}
}

// queryCharge returns the charge, in milli-RU, of a page of a query.
func queryCharge(examined, returned int) int64 {
	return chargeQueryBase + int64(examined)*chargeQueryExamined + int64(returned)*chargeQueryReturned
}

// ru converts milli-RU to request units.
func ru(milli int64) float64 { return float64(milli) / 1000 }
