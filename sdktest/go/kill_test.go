package sdktest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestKillServer starts cmd/lethe -dir (built once), writes to it through
// azcosmos from several clients, kills it with SIGKILL at random moments,
// restarts it on the same directory and checks every write a client saw
// acknowledged (201, 200, 204): it is there, as written, or was replaced
// by a later acknowledged one. A write whose call failed without an answer
// (the server died under it) may have happened or not, and nothing else.
// It makes a few kills; LETHE_KILL_SOAK=N makes N (bounded by a time
// limit: it stops by itself).
func TestKillServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/lethe")
	}
	kills, limit := 3, 90*time.Second
	if n, err := strconv.Atoi(os.Getenv("LETHE_KILL_SOAK")); err == nil && n > 0 {
		kills, limit = n, 20*time.Minute
	}
	bin := buildLethe(t)
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	srv := &killServer{t: t, bin: bin, dir: dir}
	models := srv.setup(seed, false)

	deadline := time.Now().Add(limit)
	var acked, ambiguous, checked int
	done := 0
	for ; done < kills && time.Now().Before(deadline); done++ {
		// Write from every client until the kill.
		stop := make(chan struct{})
		wg := srv.write(models, stop)
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		srv.kill()
		close(stop)
		wg.Wait()
		srv.start()

		// Every acknowledged write is there; an ambiguous one is there or
		// not; then the model takes what is there.
		c, err := srv.client().NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			a, amb, n := m.check(t, c, done)
			acked, ambiguous, checked = acked+a, ambiguous+amb, checked+n
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d kills; %d acknowledged writes, %d whose outcome the kill left unknown; %d item checks after the restarts (lost: %v)", done, acked, ambiguous, checked, t.Failed())
	if acked == 0 {
		t.Error("no write was acknowledged")
	}
}

// killServer is cmd/lethe, started and killed on one directory and port.
type killServer struct {
	t    *testing.T
	bin  string
	dir  string
	addr string
	cmd  *exec.Cmd
	log  bytes.Buffer // its standard error, since it last started
}

func (s *killServer) start() {
	t := s.t
	if s.addr == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s.addr = ln.Addr().String()
		ln.Close()
	}
	s.cmd = exec.Command(s.bin, "-dir", s.dir, "-addr", s.addr, "-compute-addr", "", "-faults=false")
	s.log.Reset()
	s.cmd.Stderr = &s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ready once it answers (401: the probe is not signed).
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		resp, err := hc.Get("https://" + s.addr + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("cmd/lethe did not answer: %v", err)
		}
	}
}

// setup starts the server, creates the database "db" and its container
// "c" (partitioned by /pk), and returns the models of four clients (full:
// on a disk that fills up).
func (s *killServer) setup(seed uint64, full bool) []*killModel {
	t := s.t
	s.start()
	t.Cleanup(s.kill)
	models := make([]*killModel, 4)
	for i := range models {
		models[i] = &killModel{id: i, items: map[string]*killItem{}, rng: rand.New(rand.NewPCG(seed, uint64(i)+2)), full: full}
	}
	ctx := context.Background()
	if _, err := s.client().CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := s.client().NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	return models
}

// write has each model write through a client of its own until stop; the
// WaitGroup returned waits for them.
func (s *killServer) write(models []*killModel, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, m := range models {
		c, err := s.client().NewContainer("db", "c")
		if err != nil {
			s.t.Fatal(err)
		}
		wg.Go(func() { m.run(c, stop) })
	}
	return &wg
}

func (s *killServer) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
	if s.t.Failed() {
		s.t.Logf("cmd/lethe's output:\n%s", s.log.String())
	}
}

// client is a new azcosmos client of the server: no retries (a write
// retried after the server died under it would blur what was
// acknowledged), the server's own certificate trusted as any.
func (s *killServer) client() *azcosmos.Client {
	cred, err := azcosmos.NewKeyCredential(cosmosrest.EmulatorKey)
	if err != nil {
		s.t.Fatal(err)
	}
	tr := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	c, err := azcosmos.NewClientWithKey("https://"+s.addr+"/", cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: tr, Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// killModel is one client's items (ids of its own) as it saw them.
type killModel struct {
	id    int
	rng   *rand.Rand
	next  int // the next value written
	items map[string]*killItem
	ids   []string
	// acked counts the acknowledged writes, ambiguous those left unknown.
	acked, ambiguous int
	// full: the disk may fill up, and a 503 is the server's refusal,
	// which changed nothing (refused counts them, lastRefusal keeps the
	// last one's message); otherwise a 503 is taken for a dying server.
	full        bool
	refused     int
	lastRefusal string
	// live counts the acknowledged and refused writes for a reader while
	// the model writes.
	live struct{ acked, refused atomic.Int64 }
}

// killItem is an item's acknowledged state (v 0: absent) and, after a
// write the kill left unknown, the state it may have instead.
type killItem struct {
	v       int
	maybe   int
	unknown bool
}

// run writes until stop: a create, upsert, replace, patch or delete of one
// of its items at a time, in order, each awaited. It returns at the first
// call that fails without an answer (the server is gone).
func (m *killModel) run(c *azcosmos.ContainerClient, stop <-chan struct{}) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		var id string
		if len(m.ids) < 50 || m.rng.IntN(4) == 0 {
			id = fmt.Sprintf("c%d-%d", m.id, len(m.ids))
			m.ids = append(m.ids, id)
			m.items[id] = &killItem{}
		} else {
			id = m.ids[m.rng.IntN(len(m.ids))]
		}
		it := m.items[id]
		if it.unknown {
			continue // settled by the next check
		}
		m.next++
		v := m.next
		doc, _ := json.Marshal(map[string]any{"id": id, "pk": id, "v": v})
		pk := azcosmos.NewPartitionKeyString(id)
		var (
			resp azcosmos.ItemResponse
			err  error
			want = v
		)
		switch op := m.rng.IntN(5); {
		case it.v == 0 || op == 0:
			resp, err = c.CreateItem(ctx, pk, doc, nil)
		case op == 1:
			resp, err = c.UpsertItem(ctx, pk, doc, nil)
		case op == 2:
			resp, err = c.ReplaceItem(ctx, pk, id, doc, nil)
		case op == 3:
			var p azcosmos.PatchOperations
			p.AppendSet("/v", v)
			resp, err = c.PatchItem(ctx, pk, id, p, nil)
		default:
			resp, err = c.DeleteItem(ctx, pk, id, nil)
			want = 0
		}
		var re *azcore.ResponseError
		switch {
		case err == nil:
			switch resp.RawResponse.StatusCode {
			case 200, 201, 204:
				it.v = want
				m.acked++
				m.live.acked.Add(1)
			}
		case errors.As(err, &re) && re.StatusCode != 503 && re.StatusCode != 500:
			// An answer that changed nothing (409, 404, 412).
		case m.full && errors.As(err, &re) && re.StatusCode == 503:
			// The disk is full: refused, nothing changed.
			m.refused++
			m.live.refused.Add(1)
			m.lastRefusal = err.Error()
			time.Sleep(time.Millisecond)
		default:
			// No answer: the server died under the call.
			it.maybe, it.unknown = want, true
			m.ambiguous++
			return
		}
	}
}

// check reads every item after a restart: each must be as last
// acknowledged, or as the write left unknown would have left it. It
// returns the acknowledged and unknown writes since the last check, and
// the items read.
func (m *killModel) check(t *testing.T, c *azcosmos.ContainerClient, round int) (acked, ambiguous, n int) {
	ctx := context.Background()
	for _, id := range m.ids {
		it := m.items[id]
		got := 0
		resp, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(id), id, nil)
		var re *azcore.ResponseError
		switch {
		case err == nil:
			var d struct{ V int }
			if err := json.Unmarshal(resp.Value, &d); err != nil {
				t.Fatal(err)
			}
			got = d.V
		case errors.As(err, &re) && re.StatusCode == 404:
		default:
			t.Fatalf("reading %s after restart %d: %v", id, round, err)
		}
		if got != it.v && (!it.unknown || got != it.maybe) {
			t.Errorf("after restart %d, %s has v %d: acknowledged %d (unknown write: %v to %d)", round, id, got, it.v, it.unknown, it.maybe)
		}
		it.v, it.maybe, it.unknown = got, 0, false
		n++
	}
	acked, ambiguous = m.acked, m.ambiguous
	m.acked, m.ambiguous = 0, 0
	return acked, ambiguous, n
}

// TestKillServerDiskFull is TestKillServer on a disk that fills up: the
// server's directory is on a tmpfs of its own (it needs root, to mount
// one), and while the clients write, a file fills what is left of it.
// The server refuses writes with 503 naming the disk, and each such
// refusal changed nothing; then either the file goes, the server takes
// writes again without a restart, and it is killed, or it is killed
// while the disk is full and restarted on it (it opens read-only: the
// check reads everything) and the file goes after. Every acknowledged
// write survives each kill and restart, and no refused one comes back.
// LETHE_KILL_SOAK=N makes N rounds.
func TestKillServerDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/lethe")
	}
	rounds, limit := 3, 90*time.Second
	if n, err := strconv.Atoi(os.Getenv("LETHE_KILL_SOAK")); err == nil && n > 0 {
		rounds, limit = n, 20*time.Minute
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	bin := buildLethe(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	srv := &killServer{t: t, bin: bin, dir: filepath.Join(mnt, "data")}
	models := srv.setup(seed, true)
	filler := filepath.Join(mnt, "filler")
	totals := func() (acked, refused int) {
		for _, m := range models {
			acked, refused = acked+int(m.live.acked.Load()), refused+int(m.live.refused.Load())
		}
		return acked, refused
	}

	deadline := time.Now().Add(limit)
	var acked, ambiguous, checked, refused, resumed, fullRestarts int
	done := 0
	for ; done < rounds && time.Now().Before(deadline); done++ {
		stop := make(chan struct{})
		wg := srv.write(models, stop)
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		fill(t, filler)
		_, r0 := totals()
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		a1, r1 := totals()
		if r1 == r0 {
			t.Errorf("round %d: the disk is full and no write was refused", done)
		}
		whileFull := rng.IntN(2) == 0
		if !whileFull {
			// Room again: the server takes writes within its retry
			// interval (a second), without a restart.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(1200+rng.IntN(400)) * time.Millisecond)
			a2, _ := totals()
			resumed += a2 - a1
		}
		srv.kill()
		close(stop)
		wg.Wait()
		srv.start()
		if whileFull {
			fullRestarts++
		}

		c, err := srv.client().NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			refused += m.refused
			m.refused = 0
			a, amb, n := m.check(t, c, done)
			acked, ambiguous, checked = acked+a, ambiguous+amb, checked+n
		}
		if whileFull {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
		if t.Failed() {
			break
		}
	}
	msg := ""
	for _, m := range models {
		if m.lastRefusal != "" {
			msg = m.lastRefusal
		}
	}
	t.Logf("%d rounds (%d restarted on the full disk); %d acknowledged writes, %d refused with 503, %d acknowledged after the disk had room again, %d whose outcome the kill left unknown; %d item checks after the restarts (lost: %v)", done, fullRestarts, acked, refused, resumed, ambiguous, checked, t.Failed())
	t.Logf("a refusal: %s", msg)
	if !strings.Contains(msg, "is full") {
		t.Errorf("the 503 does not say that the disk is full: %q", msg)
	}
	if done > fullRestarts && resumed == 0 {
		t.Error("no write was acknowledged once the disk had room again")
	}
}

// fill writes the file name until the disk holding it is full.
func fill(t *testing.T, name string) {
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
