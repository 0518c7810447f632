package script

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// TestTxModel runs random sequences of writes and reads through a Tx
// against a reference model (a map of the partition's items), then
// applies the Tx's ops to the store: every operation's outcome, every
// read, and the store after the commit match the model. A failure names
// its seed (seeds 1 to 200, in order).
func TestTxModel(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 34))
		st := newMemStore()
		model := map[string]int{} // id → the item's n
		for i := range rng.IntN(4) {
			id := fmt.Sprint("k", i)
			st.docs[id] = withSystem([]byte(fmt.Sprintf(`{"id":%q,"n":-1}`, id)), 1, "e"+id)
			model[id] = -1
		}
		tx := NewTx(context.Background(), st, TxOptions{MaxOps: 100, MaxBytes: 1 << 20})
		for step := range 1 + rng.IntN(30) {
			id := fmt.Sprint("k", rng.IntN(5))
			doc := []byte(fmt.Sprintf(`{"id":%q,"n":%d}`, id, step))
			_, live := model[id]
			var err error
			var want int // the status the model expects, 0 for success
			switch kind := WriteKind(rng.IntN(5)); kind {
			case WriteCreate, WriteUpsert, WriteReplace, WriteDelete:
				if kind == WriteDelete {
					doc = nil
				}
				_, err = tx.Write(kind, id, doc, "")
				switch {
				case kind == WriteCreate && live:
					want = http.StatusConflict
				case (kind == WriteReplace || kind == WriteDelete) && !live:
					want = http.StatusNotFound
				case kind == WriteDelete:
					delete(model, id)
				default:
					model[id] = step
				}
			default:
				var got []byte
				got, _, err = tx.read(id)
				if !live {
					want = http.StatusNotFound
				} else if err == nil {
					var d struct{ N int }
					_ = json.Unmarshal(got, &d)
					if d.N != model[id] {
						t.Fatalf("seed %d step %d: read %s, model n %d", seed, step, got, model[id])
					}
				}
			}
			status := 0
			if oe, ok := err.(*OpError); ok {
				status = oe.Status
			} else if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if status != want {
				t.Fatalf("seed %d step %d on %s: status %d, model %d", seed, step, id, status, want)
			}
		}
		for _, op := range tx.Ops() {
			cur, ok := st.docs[op.ID]
			switch op.Kind {
			case OpCreate:
				if ok {
					t.Fatalf("seed %d: create of existing %s", seed, op.ID)
				}
			case OpReplace, OpDelete:
				if !ok || etagOf(cur) != op.IfMatch {
					t.Fatalf("seed %d: %v of %s IfMatch %q, current %s", seed, op.Kind, op.ID, op.IfMatch, cur)
				}
			}
			if op.Kind == OpDelete {
				delete(st.docs, op.ID)
			} else {
				st.docs[op.ID] = withSystem(op.Doc, time.Now().Unix(), "c")
			}
		}
		if len(st.docs) != len(model) {
			t.Fatalf("seed %d: %d items after the commit, model %d", seed, len(st.docs), len(model))
		}
		for id, n := range model {
			var d struct{ N int }
			_ = json.Unmarshal(st.docs[id], &d)
			if d.N != n {
				t.Fatalf("seed %d: %s has n %d, model %d", seed, id, d.N, n)
			}
		}
	}
}
