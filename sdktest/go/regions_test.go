package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/anishathalye/porcupine"
	"github.com/lethedb/lethe"
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

// floor is the lowest version of an item a session may read, and why.
type floor struct {
	v   int
	why string
}

// session checks one client's reads against the four session guarantees:
// it keeps, for each item, the lowest version the client may read (the
// versions it wrote, read, and learned of as what the writers of the
// versions it read had written or read before them) and why. Each item
// has one writer, whose versions of it grow: c2-0 and c2-1 are client 2's.
type session struct {
	client int
	floors map[string]floor
}

func newSession(client int) *session { return &session{client: client, floors: map[string]floor{}} }

// sessionDoc is a version of an item as the sessions write it: its
// writer, and the versions of other items its writer had written or read
// before it (its session's causal past).
type sessionDoc struct {
	ID    string         `json:"id"`
	V     int            `json:"v"`
	By    int            `json:"by"`
	After map[string]int `json:"after"`
}

// raise raises the floor of key to v, for why.
func (s *session) raise(key string, v int, why string) {
	if v > s.floors[key].v {
		s.floors[key] = floor{v, why}
	}
}

// write returns the document of the client's write of key, the version
// after the last it wrote, and raises the floor of key to it
// (read-your-writes).
func (s *session) write(key string) sessionDoc {
	d := sessionDoc{ID: key, V: s.floors[key].v + 1, By: s.client, After: map[string]int{}}
	for k, f := range s.floors {
		if k != key {
			d.After[k] = f.v
		}
	}
	s.raise(key, d.V, fmt.Sprintf("writing version %d (read-your-writes)", d.V))
	return d
}

// read checks the client's read of key, which found d (nil: not found),
// and returns the guarantee it breaks, if any; then raises the floors of
// what d's writer had written (monotonic writes) or read
// (writes-follow-reads) before it, and of key (monotonic reads).
func (s *session) read(key string, d *sessionDoc) error {
	v := 0
	if d != nil {
		v = d.V
	}
	var err error
	if f := s.floors[key]; v < f.v {
		err = fmt.Errorf("client %d read %s at version %d after %s", s.client, key, v, f.why)
	}
	if d != nil {
		for k, dv := range d.After {
			rule := "writes-follow-reads"
			if owner(k) == d.By {
				rule = "monotonic writes"
			}
			s.raise(k, dv, fmt.Sprintf("reading %s version %d, which client %d wrote after %s version %d (%s)", key, v, d.By, k, dv, rule))
		}
	}
	s.raise(key, v, fmt.Sprintf("reading version %d (monotonic reads)", v))
	return err
}

// owner returns the client whose item key is ("c2-1": 2).
func owner(key string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(key[:strings.IndexByte(key, '-')], "c"))
	return n
}

// sessionClient is a client of a session check: a container client of
// one region, its session token (azcosmos keeps none itself) and its
// session.
type sessionClient struct {
	cc     *azcosmos.ContainerClient
	tokens bool // pass session tokens
	token  string
	s      *session
}

// keep keeps tok when it is ahead of the client's token.
func (c *sessionClient) keep(tok *string) {
	if c.tokens && tok != nil && (c.token == "" || tokenNumber(*tok) > tokenNumber(c.token)) {
		c.token = *tok
	}
}

func (c *sessionClient) options() *azcosmos.ItemOptions {
	if !c.tokens {
		return nil
	}
	return &azcosmos.ItemOptions{SessionToken: &c.token}
}

// write writes the client's next version of key.
func (c *sessionClient) write(key string) error {
	b, err := json.Marshal(c.s.write(key))
	if err != nil {
		return err
	}
	resp, err := c.cc.UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(key), b, c.options())
	if err != nil {
		return err
	}
	c.keep(resp.SessionToken)
	return nil
}

// read reads key and checks what it found: a broken guarantee is
// returned in broken; err says the read reached no region.
func (c *sessionClient) read(key string) (broken, err error) {
	resp, err := c.cc.ReadItem(context.Background(), azcosmos.NewPartitionKeyString(key), key, c.options())
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return c.s.read(key, nil), nil
	case err != nil:
		return nil, err
	}
	var d sessionDoc
	if err := json.Unmarshal(resp.Value, &d); err != nil {
		return nil, err
	}
	c.keep(resp.SessionToken)
	return c.s.read(key, &d), nil
}

// TestRegionsSessionGuarantees: azcosmos clients of a Session account of
// three regions, each preferring its own and passing on its session token
// (azcosmos keeps none itself), read and write under a seeded random lag
// while the clock moves, a region goes down and the write region fails
// over; every client's reads keep the four session guarantees
// (read-your-writes, monotonic reads, monotonic writes,
// writes-follow-reads: session), each region's replica holds, of each
// client's items, a prefix of its writes while they run, and every
// region ends with each client's last writes. The same clients without
// session tokens in an Eventual account break each guarantee, and the
// check says so.
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
	last := make([]map[string]int, clients) // each client's last version of each of its items
	for c := range clients {
		cc, err := a.NewRegionClient([]string{regions[c%len(regions)]}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 1))
			cl := &sessionClient{cc: cc, tokens: true, s: newSession(c)}
			for i := range ops {
				if r.IntN(3) == 0 {
					key := fmt.Sprintf("c%d-%d", c, r.IntN(2))
					if err := cl.write(key); err != nil {
						t.Errorf("client %d, op %d: upsert %s: %v", c, i, key, err)
						return
					}
					continue
				}
				broken, err := cl.read(fmt.Sprintf("c%d-%d", r.IntN(clients), r.IntN(2)))
				if err != nil {
					continue // no region answered: nothing was read
				}
				if broken != nil {
					t.Error(broken)
				}
			}
			last[c] = map[string]int{}
			for k := range 2 {
				key := fmt.Sprintf("c%d-%d", c, k)
				last[c][key] = cl.s.floors[key].v
			}
		}()
	}
	// The clock moves, a read region goes down and comes up, and the write
	// region fails over, while the clients run; at each step, each
	// region's replica holds of each client's items a prefix of its
	// writes.
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
			for _, region := range regions {
				for c := range clients {
					if err := replicaPrefix(a, region, c); err != nil {
						t.Error(err)
					}
				}
			}
			time.Sleep(time.Millisecond) // paces the clock against the clients; not for correctness
		}
	}()
	wg.Wait()
	<-done
	// Every region ends with each client's last writes.
	a.FastForward(10 * time.Second)
	for _, region := range regions {
		for c := range clients {
			for key, v := range last[c] {
				if d := replicaDoc(a, region, key); (d == nil && v > 0) || (d != nil && d.V != v) {
					t.Errorf("%s ends with %s at %+v, client %d wrote version %d last", region, key, d, c, v)
				}
			}
		}
	}

	// Without session tokens, in an Eventual account whose West US is an
	// hour behind, each guarantee breaks for a client that reads in both
	// regions, and the check says which.
	e := lethetest.NewWithOptions(t, lethetest.Options{Regions: regions[:2], Consistency: "Eventual",
		Lag: func(string, string) time.Duration { return time.Hour }})
	e.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}})
	region := map[string]*azcosmos.ContainerClient{}
	for _, name := range regions[:2] {
		cc, err := e.NewRegionClient([]string{name}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		region[name] = cc
	}
	// step is one operation of the broken history: client c, in region,
	// writes or reads key.
	type step struct {
		c      int
		region string
		write  bool
		key    string
	}
	sessions := map[int]*sessionClient{}
	for rule, steps := range map[string][]step{
		"read-your-writes": {{0, "East US", true, "c0-0"}, {0, "West US", false, "c0-0"}},
		"monotonic reads":  {{1, "East US", true, "c1-0"}, {2, "East US", false, "c1-0"}, {2, "West US", false, "c1-0"}},
		// Client 3 writes c3-0, then c3-1; client 4 reads c3-1, then c3-0
		// where c3-1 has not arrived.
		"monotonic writes": {{3, "East US", true, "c3-0"}, {3, "East US", true, "c3-1"}, {4, "East US", false, "c3-1"}, {4, "West US", false, "c3-0"}},
		// Client 6 reads client 5's c5-0, then writes c6-0; client 7 reads
		// c6-0, then c5-0 where it has not arrived.
		"writes-follow-reads": {{5, "East US", true, "c5-0"}, {6, "East US", false, "c5-0"}, {6, "East US", true, "c6-0"}, {7, "East US", false, "c6-0"}, {7, "West US", false, "c5-0"}},
	} {
		var broken []error
		for _, st := range steps {
			cl := sessions[st.c]
			if cl == nil {
				cl = &sessionClient{s: newSession(st.c)}
				sessions[st.c] = cl
			}
			cl.cc = region[st.region]
			if st.write {
				if err := cl.write(st.key); err != nil {
					t.Fatal(err)
				}
				continue
			}
			b, err := cl.read(st.key)
			if err != nil {
				t.Fatal(err)
			}
			if b != nil {
				broken = append(broken, b)
			}
		}
		if len(broken) != 1 || !strings.Contains(broken[0].Error(), "("+rule+")") {
			t.Errorf("%s without session tokens in an Eventual account: the check found %v", rule, broken)
		}
	}
}

// replicaDoc returns key as region's replica holds it, nil if it holds
// none.
func replicaDoc(a *lethetest.Account, region, key string) *sessionDoc {
	it, ok := a.ItemIn(region, "db", "kv", lethe.NewPartitionKeyString(key), key)
	if !ok {
		return nil
	}
	var d sessionDoc
	if err := json.Unmarshal(it.JSON, &d); err != nil {
		panic(err) // the sessions wrote it
	}
	return &d
}

// replicaPrefix returns an error unless region's replica holds, of client
// c's two items, a prefix of its writes: each version of one that it
// holds was written after versions of the other that it holds too, or
// newer ones (monotonic writes, in the region).
func replicaPrefix(a *lethetest.Account, region string, c int) error {
	for k := range 2 {
		key, other := fmt.Sprintf("c%d-%d", c, k), fmt.Sprintf("c%d-%d", c, 1-k)
		d := replicaDoc(a, region, key)
		if d == nil {
			continue
		}
		// Read after d: a replica's versions only grow, so a version it
		// holds now it held, or an older one, when d was read.
		o := replicaDoc(a, region, other)
		if want := d.After[other]; want > 0 && (o == nil || o.V < want) {
			return fmt.Errorf("%s holds %s version %d, written after %s version %d, and %s at %+v (monotonic writes)", region, key, d.V, other, want, other, o)
		}
	}
	return nil
}

// tokenNumber is a session token's LSN ("0:-1#12": 12).
func tokenNumber(tok string) int {
	var n int
	if i := strings.LastIndexByte(tok, '#'); i >= 0 {
		n, _ = strconv.Atoi(tok[i+1:])
	}
	return n
}

// laggedAccount returns an account of three regions at level whose every
// change reaches each read region after a lag drawn from seed, uniform
// up to most, with a container db/kv on /pk; a BoundedStaleness account
// may lag 3 changes and 2 s at most.
func laggedAccount(t *testing.T, level string, seed uint64, most time.Duration) (*lethetest.Account, []string) {
	t.Helper()
	regions := []string{"East US", "West US", "North Europe"}
	rnd := rand.New(rand.NewPCG(seed, 0))
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: regions, Consistency: level,
		MaxStalenessPrefix: 3, MaxIntervalInSeconds: 2,
		// Called under the account's scheduler lock: rnd needs no other.
		Lag: func(string, string) time.Duration { return time.Duration(rnd.Int64N(int64(most))) }})
	a.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	return a, regions
}

// regionContainers returns a container client of db/kv for each region,
// preferring it.
func regionContainers(t *testing.T, a *lethetest.Account, regions []string) map[string]*azcosmos.ContainerClient {
	t.Helper()
	out := map[string]*azcosmos.ContainerClient{}
	for _, name := range regions {
		cc, err := a.NewRegionClient([]string{name}, nil).NewContainer("db", "kv")
		if err != nil {
			t.Fatal(err)
		}
		out[name] = cc
	}
	return out
}

// staleReads runs, in a laggedAccount at level (lag up to 10 s), seeded
// random steps: the write region's client upserts the next version of
// item x, the clock moves up to 1.5 s, or a client of a read region
// reads x there. It returns the reads that broke bounded staleness's
// bounds: a version more than 3 behind the writes acknowledged before
// the read, or older than one acknowledged 2 s or more before it.
func staleReads(t *testing.T, level string, seed uint64) []string {
	t.Helper()
	const maxVersions, maxAge = 3, 2 * time.Second
	a, regions := laggedAccount(t, level, seed, 10*time.Second)
	cs := regionContainers(t, a, regions)
	pk := azcosmos.NewPartitionKeyString("p")
	r := rand.New(rand.NewPCG(seed, 1))
	var acked []time.Time // when each version was acknowledged, by the account's clock
	var broken []string
	for range 300 {
		switch r.IntN(4) {
		case 0, 1:
			if _, err := cs["East US"].UpsertItem(context.Background(), pk, fmt.Appendf(nil, `{"id":"x","pk":"p","v":%d}`, len(acked)+1), nil); err != nil {
				t.Fatal(err)
			}
			acked = append(acked, a.Now())
		case 2:
			a.FastForward(time.Duration(r.IntN(1500)) * time.Millisecond)
		case 3:
			region := regions[1+r.IntN(len(regions)-1)]
			v := 0
			resp, err := cs[region].ReadItem(context.Background(), pk, "x", nil)
			var re *azcore.ResponseError
			switch {
			case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
			case err != nil:
				t.Fatal(err)
			default:
				var item struct{ V int }
				if err := json.Unmarshal(resp.Value, &item); err != nil {
					t.Fatal(err)
				}
				v = item.V
			}
			old := 0 // the versions acknowledged maxAge or more ago
			for old < len(acked) && !acked[old].Add(maxAge).After(a.Now()) {
				old++
			}
			if v < len(acked)-maxVersions || v < old {
				broken = append(broken, fmt.Sprintf("%s read version %d of %d acknowledged, %d of them %v or more ago", region, v, len(acked), old, maxAge))
			}
		}
	}
	return broken
}

// TestRegionsBoundedStaleness: under BoundedStaleness (3 changes, 2 s),
// reads in the read regions through azcosmos never lag more than either
// bound, over seeded random histories whose replication lag (up to 10 s)
// is far beyond them; under Eventual, the same histories do, and the
// check says so.
func TestRegionsBoundedStaleness(t *testing.T) {
	for seed := range uint64(3) {
		if broken := staleReads(t, "BoundedStaleness", seed); len(broken) > 0 {
			t.Errorf("seed %d: %d reads beyond the staleness bounds, the first: %s", seed, len(broken), broken[0])
		}
		if broken := staleReads(t, "Eventual", seed); len(broken) == 0 {
			t.Errorf("seed %d: under Eventual, with a lag of up to 10 s, no read went beyond the bounds", seed)
		}
	}
}

// prefixCheck checks that what observers read of a partition is a
// consistent prefix of its writes: a state the writes passed through (no
// gap), and for each observer never one before the last it read (no
// reordering).
type prefixCheck struct {
	states map[string][]int // the indexes of the writes each state followed (0: none), by its encoding
	n      int              // the writes so far
	items  map[string]int   // the state after them
	last   map[string]int   // the index of the state each observer read last
}

func newPrefixCheck() *prefixCheck {
	return &prefixCheck{states: map[string][]int{"": {0}}, items: map[string]int{}, last: map[string]int{}}
}

// encode is a state's encoding: its items and versions, in order.
func encode(items map[string]int) string {
	var parts []string
	for k, v := range items {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// wrote records a write: key at version v, or its delete (v 0).
func (p *prefixCheck) wrote(key string, v int) {
	if v == 0 {
		delete(p.items, key)
	} else {
		p.items[key] = v
	}
	p.n++
	e := encode(p.items)
	p.states[e] = append(p.states[e], p.n)
}

// read checks what observer read, items at their versions.
func (p *prefixCheck) read(observer string, items map[string]int) error {
	e := encode(items)
	at, ok := p.states[e]
	if !ok {
		return fmt.Errorf("%s read {%s}, which no prefix of the writes is (a gap)", observer, e)
	}
	i := slices.IndexFunc(at, func(i int) bool { return i >= p.last[observer] })
	if i < 0 {
		return fmt.Errorf("%s read {%s}, the state after write %d, having read the state after write %d (a reordering)", observer, e, at[len(at)-1], p.last[observer])
	}
	p.last[observer] = at[i]
	return nil
}

// TestRegionsConsistentPrefix: under ConsistentPrefix, with a seeded
// random lag of up to 5 s, what azcosmos queries of a partition in each
// read region is always a state the write region's upserts and deletes of
// its items passed through, never one before the last that region showed.
// Point reads of its items in two regions, one an hour behind, put
// together are no such state, and the check says so.
func TestRegionsConsistentPrefix(t *testing.T) {
	for seed := range uint64(3) {
		a, regions := laggedAccount(t, "ConsistentPrefix", seed, 5*time.Second)
		cs := regionContainers(t, a, regions)
		pk := azcosmos.NewPartitionKeyString("p")
		r := rand.New(rand.NewPCG(seed, 2))
		p := newPrefixCheck()
		for i := range 300 {
			key := fmt.Sprintf("k%d", r.IntN(4))
			switch r.IntN(5) {
			case 0, 1:
				if _, err := cs["East US"].UpsertItem(context.Background(), pk, fmt.Appendf(nil, `{"id":%q,"pk":"p","v":%d}`, key, i+1), nil); err != nil {
					t.Fatal(err)
				}
				p.wrote(key, i+1)
			case 2:
				_, err := cs["East US"].DeleteItem(context.Background(), pk, key, nil)
				var re *azcore.ResponseError
				if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				p.wrote(key, 0)
			case 3:
				a.FastForward(time.Duration(r.IntN(1000)) * time.Millisecond)
			case 4:
				region := regions[1+r.IntN(len(regions)-1)]
				items := map[string]int{}
				pager := cs[region].NewQueryItemsPager("SELECT * FROM c", pk, nil)
				for pager.More() {
					page, err := pager.NextPage(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					for _, raw := range page.Items {
						var item struct {
							ID string
							V  int
						}
						if err := json.Unmarshal(raw, &item); err != nil {
							t.Fatal(err)
						}
						items[item.ID] = item.V
					}
				}
				if err := p.read(region, items); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		}
	}

	// k0, then k1, written; West US has both, North Europe neither: k1
	// from West US and k0 from North Europe is a gap, and North Europe's
	// state after West US's a reordering.
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: []string{"East US", "West US", "North Europe"}, Consistency: "ConsistentPrefix",
		Lag: func(_, to string) time.Duration {
			if to == "North Europe" {
				return time.Hour
			}
			return 0
		}})
	a.CreateContainer("db", azcosmos.ContainerProperties{ID: "kv", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	cs := regionContainers(t, a, []string{"East US", "West US", "North Europe"})
	pk := azcosmos.NewPartitionKeyString("p")
	p := newPrefixCheck()
	for i, key := range []string{"k0", "k1"} {
		if _, err := cs["East US"].UpsertItem(context.Background(), pk, fmt.Appendf(nil, `{"id":%q,"pk":"p","v":%d}`, key, i+1), nil); err != nil {
			t.Fatal(err)
		}
		p.wrote(key, i+1)
	}
	// read returns key's version in region, 0 when it has none.
	read := func(region, key string) int {
		resp, err := cs[region].ReadItem(context.Background(), pk, key, nil)
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		var item struct{ V int }
		if err := json.Unmarshal(resp.Value, &item); err != nil {
			t.Fatal(err)
		}
		return item.V
	}
	mixed := map[string]int{"k1": read("West US", "k1")}
	if v := read("North Europe", "k0"); v > 0 {
		mixed["k0"] = v
	}
	if err := p.read("West US and North Europe", mixed); err == nil || !strings.Contains(err.Error(), "(a gap)") {
		t.Fatalf("k1 from West US, k0 from North Europe, %v: the check says %v", mixed, err)
	}
	for _, region := range []string{"West US", "North Europe"} {
		items := map[string]int{}
		for _, key := range []string{"k0", "k1"} {
			if v := read(region, key); v > 0 {
				items[key] = v
			}
		}
		err := p.read("a client of both", items)
		if region == "West US" && err != nil {
			t.Fatal(err)
		}
		if region == "North Europe" && (err == nil || !strings.Contains(err.Error(), "(a reordering)")) {
			t.Fatalf("North Europe's %v after West US's: the check says %v", items, err)
		}
	}
}
