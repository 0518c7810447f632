package lethe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lethedb/lethe"
)

// TestResumedPageNeverSplitsABatch: a page resumed from a continuation
// token reads its items in steps; a transactional batch that commits
// between two steps must not show in part of the page. A writer keeps
// replacing two items far apart (first and last) in one batch with the
// same version; every page that holds both must hold one version.
func TestResumedPageNeverSplitsABatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := lethe.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	pk := lethe.NewPartitionKey()
	put := func(id string, v int) {
		if _, err := c.UpsertItem(ctx, pk, []byte(fmt.Sprintf(`{"id":%q,"v":%d}`, id, v)), nil); err != nil {
			t.Fatal(err)
		}
	}
	put("0-first", 0) // the first page holds it alone
	put("a", 0)
	for i := range 200 {
		put(fmt.Sprintf("filler-%03d", i), 0)
	}
	put("b", 0)

	first, err := c.NewQueryItemsPager("SELECT c.id, c.v FROM c", pk, &lethe.QueryOptions{PageSizeHint: 1}).NextPage(ctx)
	if err != nil || first.ContinuationToken == "" {
		t.Fatalf("first page: %v %v", first, err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := 1; !stop.Load(); v++ {
			b := c.NewTransactionalBatch(pk)
			b.UpsertItem([]byte(fmt.Sprintf(`{"id":"a","v":%d}`, v)), nil)
			b.UpsertItem([]byte(fmt.Sprintf(`{"id":"b","v":%d}`, v)), nil)
			if r, err := c.ExecuteTransactionalBatch(ctx, b, nil); err != nil || !r.Success {
				t.Errorf("batch: %v", err)
				return
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	split := 0
	for range 300 {
		tok := first.ContinuationToken
		seen := map[string]int{}
		for tok != "" {
			page, err := c.NewQueryItemsPager("SELECT c.id, c.v FROM c", pk, &lethe.QueryOptions{PageSizeHint: 1000, ContinuationToken: tok}).NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pageSeen := map[string]int{}
			for _, it := range page.Items {
				var r struct {
					ID string `json:"id"`
					V  int    `json:"v"`
				}
				if err := json.Unmarshal(it, &r); err != nil {
					t.Fatal(err)
				}
				pageSeen[r.ID] = r.V
				seen[r.ID] = r.V
			}
			va, okA := pageSeen["a"]
			vb, okB := pageSeen["b"]
			if okA && okB && va != vb {
				split++
			}
			tok = page.ContinuationToken
		}
		if _, ok := seen["b"]; !ok {
			t.Fatal("a read of every page missed b")
		}
	}
	if split > 0 {
		t.Fatalf("%d of 300 pages showed part of a transactional batch", split)
	}
}
