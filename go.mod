module github.com/lethedb/lethe

go 1.26

require (
	github.com/golang/geo v0.0.0-20260818125358-b200a1149890
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
