module github.com/lethedb/lethe/cmd/lethe

go 1.26

require github.com/lethedb/lethe v0.0.0

require github.com/google/btree v1.1.3 // indirect

replace github.com/lethedb/lethe => ../..
