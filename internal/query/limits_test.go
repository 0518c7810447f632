package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// likeReference matches s against the compiled pattern by dynamic
// programming over characters: an independent check of likeMatch.
func likeReference(s string, segs [][]likeItem) bool {
	type tok struct {
		pct bool
		it  likeItem
	}
	var toks []tok
	for i, seg := range segs {
		if i > 0 {
			toks = append(toks, tok{pct: true})
		}
		for _, it := range seg {
			toks = append(toks, tok{it: it})
		}
	}
	// ok[j]: the first i runes of s match the first j tokens.
	ok := make([]bool, len(toks)+1)
	ok[0] = true
	for j := range toks {
		ok[j+1] = ok[j] && toks[j].pct
	}
	for _, r := range s {
		next := make([]bool, len(toks)+1)
		for j, tk := range toks {
			if tk.pct {
				next[j+1] = next[j] || ok[j+1]
			} else {
				next[j+1] = ok[j] && tk.it.match(r)
			}
		}
		ok = next
	}
	return ok[len(toks)]
}

func TestLikeMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	alpha := []string{"a", "b", "é", "😀"}
	pat := []string{"a", "b", "é", "😀", "%", "%", "_", "[ab]", "[^a]", "[a-b]", "!%", "!_", "["}
	ev := &evaluator{ctx: context.Background(), nextCheck: checkEvery}
	for range 20000 {
		var s, p strings.Builder
		for range rng.IntN(8) {
			s.WriteString(alpha[rng.IntN(len(alpha))])
		}
		for range rng.IntN(6) {
			p.WriteString(pat[rng.IntN(len(pat))])
		}
		esc := rune(-1)
		if rng.IntN(2) == 0 {
			esc = '!'
		}
		want := likeReference(s.String(), compileLike(p.String(), esc))
		require.Equal(t, want, ev.likeMatch(s.String(), p.String(), esc), "%q LIKE %q (escape %q)", s.String(), p.String(), esc)
	}
}

func TestKeyRoundTrip(t *testing.T) {
	q, err := Parse(`SELECT c.id FROM c JOIN t IN c.tags ORDER BY c.v, c.n DESC`)
	require.NoError(t, err)
	res, err := Exec(context.Background(), q, nil, mixed, testNow)
	require.NoError(t, err)
	require.NotEmpty(t, res.Items)
	checkKeys(t, q, &res)
	// Garbage is refused, never a panic.
	rng := rand.New(rand.NewPCG(1, 2))
	valid := res.Key(0).AppendBinary(nil)
	for range 10000 {
		b := append([]byte(nil), valid...)
		b = b[:rng.IntN(len(b)+1)]
		for range rng.IntN(3) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		}
		ParseKey(b)
	}
}

// TestExecFromResume: resuming after any result gives the rest of the
// results, with OFFSET not applied again and TOP and LIMIT counted from the
// start.
func TestExecFromResume(t *testing.T) {
	for _, text := range []string{
		`SELECT VALUE c.id FROM c`,
		`SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY c.n DESC`,
		`SELECT VALUE c.v FROM c ORDER BY c.v`,
		`SELECT DISTINCT VALUE c.v FROM c`,
		`SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags ORDER BY t DESC`,
		`SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 2 LIMIT 5`,
		`SELECT TOP 4 VALUE c.id FROM c`,
		`SELECT VALUE COUNT(1) FROM c`,
		`SELECT c.v, COUNT(1) AS n FROM c GROUP BY c.v`,
		`SELECT VALUE COUNT(1) FROM c GROUP BY IS_DEFINED(c.tags), IS_STRING(c.v)`,
		`SELECT DISTINCT VALUE COUNT(1) FROM c GROUP BY c.v`,
		`SELECT TOP 4 VALUE c.v FROM c GROUP BY c.v`,
		`SELECT t, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY t OFFSET 1 LIMIT 5`,
		`SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags) AS n FROM c ORDER BY (SELECT VALUE COUNT(1) FROM t IN c.tags) DESC`,
	} {
		q, err := Parse(text)
		require.NoError(t, err)
		all, err := Exec(context.Background(), q, nil, mixed, testNow)
		require.NoError(t, err)
		for i := range all.Items {
			rest, err := ExecFrom(context.Background(), q, nil, mixed, testNow, &Resume{After: all.Key(i), Consumed: i + 1}, nil)
			require.NoError(t, err, text)
			assert.Equal(t, all.Items[i+1:], rest.Items, "%s after %d", text, i)
		}
	}
}

// TestExecCancelWithinDocument: the context is honoured inside one
// document's rows, not only between documents.
func TestExecCancelWithinDocument(t *testing.T) {
	arr := make([]string, 300)
	for i := range arr {
		arr[i] = fmt.Sprint(i)
	}
	docs := []Doc{{ID: "a", JSON: []byte(`{"id":"a","arr":[` + strings.Join(arr, ",") + `]}`)}}
	// 90,000 rows of about 10 µs each.
	stopsAtDeadline(t, `SELECT VALUE 1 FROM c JOIN a IN c.arr JOIN b IN c.arr WHERE LENGTH(REPLICATE("x", 9999)) < a + b`, docs)

	// The limit on one item's rows.
	q, err := Parse(`SELECT VALUE 1 FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN d IN c.arr`)
	require.NoError(t, err)
	_, err = Exec(context.Background(), q, nil, docs, testNow)
	var qe *Error
	require.ErrorAs(t, err, &qe)
	assert.Contains(t, qe.Msg, "more than 100000 rows from one item")
}
