module github.com/lethedb/lethe

go 1.26

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
