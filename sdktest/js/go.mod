// sdktest/js holds no Go. This file makes it a module of its own so that
// the root module's ./... (go vet, staticcheck, go test) never descends into
// node_modules: the go command does not skip directories of that name, and
// an npm package that ships .go files would otherwise break the build.
module github.com/lethedb/lethe/sdktest/js

go 1.26
