package lethe

// SameShard reports whether the items a and b of partition key pk of c
// share a shard (and so its lock).
func SameShard(c *Container, pk PartitionKey, a, b string) bool {
	i, _ := c.shardIndex(pk.enc, a)
	j, _ := c.shardIndex(pk.enc, b)
	return i == j
}
