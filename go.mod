module github.com/lethedb/lethe

go 1.26

require (
	github.com/dop251/goja v0.0.0-20260917113740-793a2a65c13b
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/dlclark/regexp2/v2 v2.5.2
	github.com/go-sourcemap/sourcemap v2.1.3+incompatible // indirect
	github.com/google/pprof v0.0.0-20230207041349-798e818bf904 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.3.8 // indirect
)
