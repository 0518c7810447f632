module github.com/lethedb/lethe/lethetest/bench

go 1.26

require (
	github.com/Azure/azure-sdk-for-go/sdk/azcore v1.21.0
	github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos v1.5.0
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/lethedb/lethe v0.0.0
	github.com/lethedb/lethe/lethetest v0.0.0
)

require (
	github.com/Azure/azure-sdk-for-go/sdk/internal v1.11.2 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/net v0.52.0 // indirect
	golang.org/x/text v0.35.0 // indirect
)

replace github.com/lethedb/lethe => ../../

replace github.com/lethedb/lethe/lethetest => ../
