package lethetest

// SplitPartitionKeyRange splits the partition key range rangeID of the
// container coll of the database db in two, as the service splits a range
// that grows (cosmosrest.Handler.SplitPartitionKeyRange), and returns the
// children's ids: requests naming the range get 410 with substatus 1002
// from then on, and azcosmos reads the ranges again and goes on with the
// children. In an account of regions, it splits the range in every
// region. It fails the test when the range does not exist or is too
// narrow to split.
func (a *Account) SplitPartitionKeyRange(db, coll, rangeID string) []string {
	a.t.Helper()
	split := a.h.SplitPartitionKeyRange
	if a.acct != nil {
		split = a.acct.SplitPartitionKeyRange
	}
	children, err := split(db, coll, rangeID)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	return children
}
