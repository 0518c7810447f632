package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/anishathalye/porcupine"
	"github.com/lethedb/lethe/lethetest"
)

// kvInput is one operation on one item of a history: a read, an upsert,
// a replace conditional on an ETag (If-Match), a patch, a delete.
type kvInput struct {
	op    string // "read", "upsert", "replace", "patch", "delete"
	key   string
	v     int
	match string // replace's If-Match; "" for none; "" for none
}

// kvOutput is what the operation answered: its status, the value read and
// the item's ETag (read, or written).
type kvOutput struct {
	status int
	v      int
	etag   string
}

// kvState is one item's state in the model.
type kvState struct {
	exists bool
	v      int
	etag   string
}

// kvModel is the sequential specification of one container's items, one
// partition per item.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = by[k]
		}
		return out
	},
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		written := kvState{exists: true, v: in.v, etag: out.etag}
		switch in.op {
		case "read":
			if !s.exists {
				return out.status == http.StatusNotFound, s
			}
			return out.status == http.StatusOK && out.v == s.v && out.etag == s.etag, s
		case "upsert":
			return out.status == http.StatusOK || out.status == http.StatusCreated, written
		case "replace":
			switch {
			case !s.exists:
				return out.status == http.StatusNotFound, s
			case in.match != "" && s.etag != in.match:
				return out.status == http.StatusPreconditionFailed, s
			}
			return out.status == http.StatusOK, written
		case "patch":
			if !s.exists {
				return out.status == http.StatusNotFound, s
			}
			return out.status == http.StatusOK, written
		case "delete":
			if !s.exists {
				return out.status == http.StatusNotFound, s
			}
			return out.status == http.StatusNoContent, kvState{}
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		return fmt.Sprintf("%s(%s, %d, %s) -> %d %d %s", in.op, in.key, in.v, in.match, out.status, out.v, out.etag)
	},
}

// kvDo runs one operation through container c and returns what it
// answered; an error is a failure that says nothing of its effect (a read
// that found no region up: it has none).
func kvDo(ctx context.Context, c *azcosmos.ContainerClient, in kvInput) (kvOutput, error) {
	pk := azcosmos.NewPartitionKeyString(in.key)
	doc := fmt.Appendf(nil, `{"id":%q,"v":%d}`, in.key, in.v)
	var resp azcosmos.ItemResponse
	var err error
	switch in.op {
	case "read":
		resp, err = c.ReadItem(ctx, pk, in.key, nil)
	case "upsert":
		resp, err = c.UpsertItem(ctx, pk, doc, nil)
	case "replace":
		var o *azcosmos.ItemOptions
		if in.match != "" {
			m := azcore.ETag(in.match)
			o = &azcosmos.ItemOptions{IfMatchEtag: &m}
		}
		resp, err = c.ReplaceItem(ctx, pk, in.key, doc, o)
	case "patch":
		var p azcosmos.PatchOperations
		p.AppendSet("/v", in.v)
		resp, err = c.PatchItem(ctx, pk, in.key, p, nil)
	case "delete":
		resp, err = c.DeleteItem(ctx, pk, in.key, nil)
	}
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re) && (in.op != "read" || re.StatusCode == http.StatusNotFound):
		return kvOutput{status: re.StatusCode}, nil
	case err != nil:
		return kvOutput{}, err
	}
	out := kvOutput{status: resp.RawResponse.StatusCode, etag: string(resp.ETag)}
	if in.op == "read" {
		var item struct{ V int }
		if err := json.Unmarshal(resp.Value, &item); err != nil {
			return kvOutput{}, err
		}
		out.v = item.V
	}
	return out, nil
}

// regionHistory runs, against an account of three regions whose changes
// lag an hour, clients in every region (each preferring its own) doing
// seeded random operations on three items, a read region going down (and
// missing a write) and coming up meanwhile, then reads in that region,
// and returns the history.
func regionHistory(t *testing.T, consistency string, seed uint64) []porcupine.Operation {
	t.Helper()
	regions := []string{"East US", "West US", "North Europe"}
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: regions, Consistency: consistency,
		Lag: func(string, string) time.Duration { return time.Hour }})
	a.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}})
	var mu sync.Mutex
	var history []porcupine.Operation
	start := time.Now()
	var wg sync.WaitGroup
	for client := range 6 {
		region := regions[client%len(regions)]
		cc, err := a.NewRegionClient([]string{region}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, uint64(client)))
			etags := map[string]string{}
			for i := range 40 {
				in := kvInput{op: []string{"read", "read", "upsert", "replace", "patch", "delete"}[rnd.IntN(6)],
					key: fmt.Sprintf("k%d", rnd.IntN(3)), v: client*1000 + i}
				in.match = etags[in.key]
				call := time.Since(start).Nanoseconds()
				out, err := kvDo(context.Background(), cc, in)
				ret := time.Since(start).Nanoseconds()
				if err != nil {
					if in.op == "read" {
						continue // a read that reached no region changed nothing
					}
					t.Errorf("client %d: %s: %v", client, in.op, err)
					return
				}
				if out.etag != "" {
					etags[in.key] = out.etag
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	// record runs one operation through cc as client, in the history.
	record := func(client int, cc *azcosmos.ContainerClient, in kvInput) {
		call := time.Since(start).Nanoseconds()
		out, err := kvDo(context.Background(), cc, in)
		if err != nil {
			t.Fatalf("%s: %v", in.op, err)
		}
		mu.Lock()
		history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: time.Since(start).Nanoseconds()})
		mu.Unlock()
	}
	// A read region goes down while the clients run, misses a write, and
	// comes up; then clients new to it (the others shun it for a while)
	// read every item there.
	a.TakeRegionDown("North Europe", lethetest.RegionUnavailable)
	east, err := a.NewRegionClient([]string{"East US"}, nil).NewContainer("db", "kv")
	if err != nil {
		t.Fatal(err)
	}
	record(6, east, kvInput{op: "upsert", key: "k0", v: 6000})
	time.Sleep(20 * time.Millisecond) // lets some requests meet it down; not for correctness
	a.BringRegionUp("North Europe")
	wg.Wait()
	north, err := a.NewRegionClient([]string{"North Europe"}, nil).NewContainer("db", "kv")
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		record(7, north, kvInput{op: "read", key: fmt.Sprintf("k%d", k)})
	}
	return history
}

// TestRegionsStrongLinearizable: under Strong, the histories of clients
// in every region of an account, a region failing meanwhile, are
// linearizable, whatever the replication lag; under Eventual, with the
// same lag, a read in another region misses a write acknowledged before
// it, and the checker says so.
func TestRegionsStrongLinearizable(t *testing.T) {
	for seed := range uint64(3) {
		history := regionHistory(t, "Strong", seed)
		if res := porcupine.CheckOperationsTimeout(kvModel, history, 30*time.Second); res != porcupine.Ok {
			t.Fatalf("seed %d: a Strong history of %d operations is not linearizable (%v)", seed, len(history), res)
		}
	}

	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: []string{"East US", "West US"}, Consistency: "Eventual",
		Lag: func(string, string) time.Duration { return time.Hour }})
	a.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}})
	var history []porcupine.Operation
	for i, step := range []struct {
		region string
		in     kvInput
	}{{"East US", kvInput{op: "upsert", key: "k", v: 1}}, {"West US", kvInput{op: "read", key: "k"}}} {
		cc, err := a.NewRegionClient([]string{step.region}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		out, err := kvDo(context.Background(), cc, step.in)
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, porcupine.Operation{ClientId: i, Input: step.in, Call: int64(2 * i), Output: out, Return: int64(2*i + 1)})
	}
	if porcupine.CheckOperations(kvModel, history) {
		t.Fatalf("an Eventual history that reads nothing after a write is called linearizable: %+v", history)
	}
}

// TestRegionsSessionGuarantees: azcosmos clients of a Session account of
// three regions, each preferring its own and passing on its session token
// (azcosmos keeps none itself), read and write under a seeded random lag
// while the clock moves, a region goes down and the write region fails
// over; every client reads its own writes and never reads an item
// older than it read before (each item has one writer, so its versions
// grow along its history).
func TestRegionsSessionGuarantees(t *testing.T) {
	regions := []string{"East US", "West US", "North Europe"}
	rnd := rand.New(rand.NewPCG(7, 7))
	var lagMu sync.Mutex
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: regions, Consistency: "Session",
		Lag: func(string, string) time.Duration {
			lagMu.Lock()
			defer lagMu.Unlock()
			return time.Duration(rnd.IntN(3000)) * time.Millisecond
		}})
	a.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}})
	const clients, ops = 6, 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	for c := range clients {
		cc, err := a.NewRegionClient([]string{regions[c%len(regions)]}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 1))
			token := ""
			wrote := map[string]int{} // the version of each of its own items it wrote last
			seen := map[string]int{}  // the version of each item it read last
			keep := func(tok *string) {
				if tok != nil && (token == "" || tokenNumber(*tok) > tokenNumber(token)) {
					token = *tok
				}
			}
			for i := range ops {
				if r.IntN(3) == 0 {
					key := fmt.Sprintf("c%d-%d", c, r.IntN(2))
					v := wrote[key] + 1
					resp, err := cc.UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(key), fmt.Appendf(nil, `{"id":%q,"v":%d}`, key, v), &azcosmos.ItemOptions{SessionToken: &token})
					if err != nil {
						t.Errorf("client %d, op %d: upsert %s: %v", c, i, key, err)
						return
					}
					wrote[key] = v
					keep(resp.SessionToken)
					continue
				}
				key := fmt.Sprintf("c%d-%d", r.IntN(clients), r.IntN(2))
				resp, err := cc.ReadItem(context.Background(), azcosmos.NewPartitionKeyString(key), key, &azcosmos.ItemOptions{SessionToken: &token})
				v := 0
				var re *azcore.ResponseError
				switch {
				case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
				case err != nil:
					continue // no region answered: nothing was read
				default:
					var item struct{ V int }
					if err := json.Unmarshal(resp.Value, &item); err != nil {
						t.Error(err)
						return
					}
					v = item.V
					keep(resp.SessionToken)
				}
				if v < wrote[key] {
					t.Errorf("client %d read %s at version %d after writing version %d", c, key, v, wrote[key])
				}
				if v < seen[key] {
					t.Errorf("client %d read %s at version %d after reading version %d", c, key, v, seen[key])
				}
				seen[key] = max(seen[key], v)
			}
		}()
	}
	// The clock moves, a read region goes down and comes up, and the write
	// region fails over, while the clients run.
	go func() {
		defer close(done)
		for i := range 30 {
			a.FastForward(100 * time.Millisecond)
			var err error
			switch i {
			case 5:
				err = a.CosmosAccount().TakeRegionDown("North Europe", lethetest.RegionUnavailable)
			case 10:
				err = a.CosmosAccount().BringRegionUp("North Europe")
			case 15:
				err = a.CosmosAccount().Failover("West US")
			}
			if err != nil {
				t.Error(err)
			}
			time.Sleep(time.Millisecond) // paces the clock against the clients; not for correctness
		}
	}()
	wg.Wait()
	<-done
}

// tokenNumber is a session token's LSN ("0:-1#12": 12).
func tokenNumber(tok string) int {
	var n int
	if i := strings.LastIndexByte(tok, '#'); i >= 0 {
		n, _ = strconv.Atoi(tok[i+1:])
	}
	return n
}
