package lethe_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueryBounded: queries that would do huge work inside one item stop
// soon after their deadline, or are refused with a 400 naming the limit,
// well within a second (generous for a slow shared machine; longer under
// the race detector). A query in item order returns one item's JOIN rows
// page by page, each page evaluating what it returns: "join-rows" then
// fails at the page that passes MaxQueryJoinRows (in pages of 20,000,
// the fifth).
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

	for _, tc := range []struct {
		name, query string
	}{
		{"join", "SELECT VALUE 1 FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN d IN c.arr WHERE a + b + d < 0"},
		{"join-rows", "SELECT VALUE [a, b, d] FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN d IN c.arr"},
		{"like", "SELECT VALUE c.id FROM c WHERE c.s LIKE '%" + strings.Repeat("a", 50_000) + "b%'"},
		{"like-underscore", "SELECT VALUE c.id FROM c WHERE c.s LIKE '%" + strings.Repeat("a_", 25_000) + "b%'"},
		{"like-percent", "SELECT VALUE c.id FROM c WHERE c.s LIKE '" + strings.Repeat("%a", 25_000) + "%b'"},
		{"concat", concat},
		{"concat-operator", "SELECT VALUE LENGTH(c.b" + strings.Repeat(" || c.b", 1999) + ") FROM c WHERE c.id = 'big'"},
		{"replicate", "SELECT VALUE LENGTH(REPLICATE(c.b, 2000)) FROM c WHERE c.id = 'big'"},
		{"array-concat", "SELECT VALUE ARRAY_LENGTH(ARRAY_CONCAT(c.arr" + strings.Repeat(", c.arr", 1999) + ")) FROM c WHERE c.id = 'arr'"},
		{"tostring", "SELECT VALUE LENGTH(TOSTRING([c.b" + strings.Repeat(", c.b", 1999) + "])) FROM c WHERE c.id = 'big'"},
		{"projection", "SELECT VALUE [c.b" + strings.Repeat(", c.b", 1999) + "] FROM c WHERE c.id = 'big'"},
	} {
		for _, deadline := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/deadline=%v", tc.name, deadline), func(t *testing.T) {
				qctx, cancel := context.WithCancel(ctx)
				if deadline {
					qctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				}
				defer cancel()
				start := time.Now()
				var err error
				for _, e := range c.QueryItems(qctx, tc.query, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 20_000}) {
					if e != nil {
						err = e
						break
					}
				}
				elapsed := time.Since(start)
				assert.Less(t, elapsed, slowdown*time.Second)
				if err == nil {
					return // finished in time: fine (REPLICATE's own limit makes it undefined)
				}
				if deadline && errors.Is(err, context.DeadlineExceeded) {
					return
				}
				require.ErrorIs(t, err, lethe.ErrBadRequest)
				assert.Regexp(t, "limit|too", err.Error())
			})
		}
	}
}
