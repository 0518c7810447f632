package cosmosrest

import (
	"bytes"
	"fmt"

	"github.com/lethedb/lethe"
)

// populateStatsHeader asks a container's read for the statistics of each
// of its partition key ranges, in the body's "statistics" (the .NET SDK's
// DocumentCollection.PartitionKeyRangeStatistics): per range its id, its
// size in KB and its document count, and partitionKeys, the service's
// sample of its largest logical partitions, which holds only partitions
// of 1 GB or more and so is empty here.
const populateStatsHeader = "x-ms-documentdb-populatepartitionstatistics"

// withRangeStatistics returns body, a container's JSON, with the
// statistics of each of its ranges (l) added: the container's own for
// its one range, else counted by reading each range's items, which
// costs what reading them costs (the header asks for them, and the SDKs
// read a container on the hot path only without it).
func (q *request) withRangeStatistics(body []byte, c *lethe.Container, l *rangeLayout) ([]byte, error) {
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	b.WriteString(`,"statistics":[`)
	for i, r := range l.ranges {
		var count, size int64
		if len(l.ranges) == 1 {
			st := c.Stats()
			count, size = st.Items, st.Bytes
		} else {
			opts := &lethe.QueryOptions{FeedRange: &lethe.FeedRange{MinInclusive: r.lo, MaxExclusive: r.hi}}
			for doc, err := range c.QueryItems(q.ctx(), "SELECT * FROM c", lethe.NewPartitionKey(), opts) {
				if err != nil {
					return nil, err
				}
				count++
				size += int64(len(doc))
			}
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%q,"sizeInKB":%d,"documentCount":%d,"partitionKeys":[]}`, r.id, (size+1023)/1024, count)
	}
	b.WriteString("]}")
	return b.Bytes(), nil
}
