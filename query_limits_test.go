package lethe_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueryBounded: queries that would do huge work inside one item stop
// soon after their deadline, or end, refused with a 400 naming the limit
// or with their result, after a bounded amount of work. With a deadline,
// that is well within a second (generous for a slow shared machine; longer
// under the race detector). Without one, each ends as its case says, and
// the work is counted, not timed: the bytes the evaluation allocates
// (runtime.MemStats.TotalAlloc) stay under a bound each case derives
// from the limit that ends it, which a query that did the work its limit
// spares passes many times over (ARRAY_CONCAT of 2000 arrays of 3000
// numbers, each decoded, allocates about 400 MB before its arguments pass
// MaxQueryValueSize, and about 2.6 GB when all its arguments are evaluated
// first; a 4 MiB result held twice over would pass its case's 16 MiB). A
// query in item order returns one
// item's JOIN rows page by page, each page evaluating what it returns:
// "join-rows" then fails at the page that passes MaxQueryJoinRows (in
// pages of 20,000, the fifth).
func TestQueryBounded(t *testing.T) {
	c, _ := newContainer(t, lethe.TTLNever)
	arr := make([]string, 3000)
	for i := range arr {
		arr[i] = fmt.Sprint(i)
	}
	create(t, c, `{"id":"arr","arr":[`+strings.Join(arr, ",")+`]}`)
	create(t, c, `{"id":"mib","s":"`+strings.Repeat("a", 1<<20)+`"}`)
	create(t, c, `{"id":"big","b":"`+strings.Repeat("b", 2<<20-40)+`"}`)
	concat := "SELECT VALUE LENGTH(CONCAT(c.b" + strings.Repeat(", c.b", 1999) + ")) FROM c WHERE c.id = 'big'"

	const (
		joinRows = "the FROM and JOIN clauses .* produce more than 100000 rows from one item, the limit"
		tooBig   = "would build a value of .*the limit"
	)
	// Each case's bound on the bytes allocated, from the limit that ends
	// it: a few times what the limit lets it build or hold.
	const (
		// A row of the join, dropped by WHERE, allocates next to nothing;
		// one returned, about 1 KiB (its result, its page, its token).
		joinWork     = 128 * lethe.MaxQueryJoinRows
		joinRowsWork = 2 << 10 * lethe.MaxQueryJoinRows
		// LIKE allocates nothing per step; it compiles its 50,000-character
		// pattern at about 220 bytes a character.
		likeWork = 512 * 50_000
		// A value passes MaxQueryValueSize at most once before the limit
		// stops it.
		valueWork = 4 * lethe.MaxQueryValueSize
		// ARRAY_CONCAT counts each element at two bytes (its JSON at
		// least), so it takes MaxQueryValueSize/2 elements, each decoded
		// into a value, before its arguments pass the limit: about 190
		// bytes allocated an element.
		arrayWork = 256 * lethe.MaxQueryValueSize / 2
	)
	for _, tc := range []struct {
		name, query string
		end         string // without a deadline: the error's message (a regular expression), or "" for a result
		work        int    // without a deadline: the most bytes it may allocate
	}{
		{"join", "SELECT VALUE 1 FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN d IN c.arr WHERE a + b + d < 0", joinRows, joinWork},
		{"join-rows", "SELECT VALUE [a, b, d] FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN d IN c.arr", joinRows, joinRowsWork},
		{"like", "SELECT VALUE c.id FROM c WHERE c.s LIKE '%" + strings.Repeat("a", 50_000) + "b%'", "", likeWork},
		{"like-underscore", "SELECT VALUE c.id FROM c WHERE c.s LIKE '%" + strings.Repeat("a_", 25_000) + "b%'", "LIKE needs more than 67108864 steps", likeWork},
		{"like-percent", "SELECT VALUE c.id FROM c WHERE c.s LIKE '" + strings.Repeat("%a", 25_000) + "%b'", "", likeWork},
		{"concat", concat, "CONCAT " + tooBig, valueWork},
		{"concat-operator", "SELECT VALUE LENGTH(c.b" + strings.Repeat(" || c.b", 1999) + ") FROM c WHERE c.id = 'big'", "\\|\\| " + tooBig, valueWork},
		{"replicate", "SELECT VALUE LENGTH(REPLICATE(c.b, 2000)) FROM c WHERE c.id = 'big'", "", valueWork}, // REPLICATE's own limit makes it undefined
		{"array-concat", "SELECT VALUE ARRAY_LENGTH(ARRAY_CONCAT(c.arr" + strings.Repeat(", c.arr", 1999) + ")) FROM c WHERE c.id = 'arr'", "ARRAY_CONCAT " + tooBig, arrayWork},
		{"tostring", "SELECT VALUE LENGTH(TOSTRING([c.b" + strings.Repeat(", c.b", 1999) + "])) FROM c WHERE c.id = 'big'", "an array " + tooBig, valueWork},
		{"projection", "SELECT VALUE [c.b" + strings.Repeat(", c.b", 1999) + "] FROM c WHERE c.id = 'big'", "an array " + tooBig, valueWork},
	} {
		for _, deadline := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/deadline=%v", tc.name, deadline), func(t *testing.T) {
				qctx, cancel := context.WithCancel(ctx)
				if deadline {
					qctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				}
				defer cancel()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				var err error
				for _, e := range c.QueryItems(qctx, tc.query, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 20_000}) {
					if e != nil {
						err = e
						break
					}
				}
				if !deadline {
					var after runtime.MemStats
					runtime.ReadMemStats(&after)
					assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(tc.work), "bytes allocated")
					if tc.end == "" {
						require.NoError(t, err)
						return
					}
					require.ErrorIs(t, err, lethe.ErrBadRequest)
					assert.Regexp(t, tc.end, err.Error())
					return
				}
				assert.Less(t, time.Since(start), slowdown*time.Second)
				if err == nil || errors.Is(err, context.DeadlineExceeded) {
					return // finished, or stopped, in time
				}
				require.ErrorIs(t, err, lethe.ErrBadRequest)
				assert.Regexp(t, "limit|too", err.Error())
			})
		}
	}
}
