package sdktest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/lethedb/lethe/lethetest"
)

// inProcessTests are the tests TestInProcess runs again through the
// in-process transport: every test of the package (TestEveryTestRunsBothWays
// checks it).
var inProcessTests = []struct {
	name string
	f    func(*testing.T)
}{
	{"TestDatabasesAndContainers", TestDatabasesAndContainers},
	{"TestItemsExpire", TestItemsExpire},
	{"TestQueries", TestQueries},
	{"TestHierarchicalKeys", TestHierarchicalKeys},
	{"TestErrors", TestErrors},
	{"TestServiceMessages", TestServiceMessages},
	{"TestThrottlingRetried", TestThrottlingRetried},
	{"TestThroughput", TestThroughput},
	{"TestSharedAndAutoscaleThroughput", TestSharedAndAutoscaleThroughput},
	{"TestReadManyItems", TestReadManyItems},
	{"TestChangeFeed", TestChangeFeed},
	{"TestPatchItem", TestPatchItem},
	{"TestTransactionalBatch", TestTransactionalBatch},
	{"TestSearchPolicies", TestSearchPolicies},
	{"TestFullTextSearch", TestFullTextSearch},
	{"TestVectorAndRankedSearch", TestVectorAndRankedSearch},
	{"TestGateways", TestGateways},
}

// TestInProcess runs every test again with the SDK's requests served
// through lethetest.Transport, in the test's goroutine, instead of over
// HTTPS: the same requests, the same handler, the same answers.
func TestInProcess(t *testing.T) {
	for _, tc := range inProcessTests {
		t.Run(tc.name, tc.f)
	}
}

// inProcess reports whether t runs under TestInProcess.
func inProcess(t *testing.T) bool { return strings.HasPrefix(t.Name(), "TestInProcess/") }

var endpoints atomic.Int64

// serve makes h reachable by SDK clients for test t, over HTTPS with a
// server of its own or, under TestInProcess, in process at an endpoint of
// its own (azcosmos shares its caches between clients of one endpoint).
// It returns the endpoint and the transport to give the clients.
func serve(t *testing.T, h http.Handler) (string, policy.Transporter) {
	t.Helper()
	if inProcess(t) {
		return fmt.Sprintf("https://sdktest-%d.invalid/", endpoints.Add(1)), lethetest.NewTransport(h)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, srv.Client()
}

// TestEveryTestRunsBothWays fails when a test of the package is not in
// inProcessTests.
func TestEveryTestRunsBothWays(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// TestKillServer and TestKillServerDiskFull kill a real process and
	// TestWorstQuery measures one: they have no in-process form.
	// TestRegionsStrongLinearizable, TestRegionsSessionGuarantees,
	// TestRegionsBoundedStaleness, TestRegionsConsistentPrefix and
	// TestConflictResolutionPolicy run in process only (lethetest's regions).
	listed := map[string]bool{"TestInProcess": true, "TestEveryTestRunsBothWays": true, "TestKillServer": true, "TestKillServerDiskFull": true, "TestWorstQuery": true,
		"TestRegionsStrongLinearizable": true, "TestRegionsSessionGuarantees": true, "TestRegionsBoundedStaleness": true, "TestRegionsConsistentPrefix": true,
		"TestConflictResolutionPolicy": true}
	for _, tc := range inProcessTests {
		listed[tc.name] = true
	}
	var missing []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && !listed[fn.Name.Name] {
				missing = append(missing, fn.Name.Name)
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("tests not run in process (add them to inProcessTests): %v", missing)
	}
}
