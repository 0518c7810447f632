package replication

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// TestDue sends changes and checks what each Due delivers, in order.
func TestDue(t *testing.T) {
	type send struct {
		to      string
		written float64
		v       int
	}
	type due struct {
		to   string
		now  float64
		want []int
	}
	lag := func(from, to string) time.Duration {
		if to == "far" {
			return 10 * time.Second
		}
		return time.Second
	}
	for _, tc := range []struct {
		name  string
		bound Bound
		sends []send
		dues  []due
	}{
		{"due after its lag", Bound{}, []send{{"near", 0, 1}, {"near", 0.5, 2}},
			[]due{{"near", 0.9, nil}, {"near", 1, []int{1}}, {"near", 2, []int{2}}, {"near", 3, nil}}},
		{"each destination its own lag", Bound{}, []send{{"near", 0, 1}, {"far", 0, 2}},
			[]due{{"far", 5, nil}, {"near", 5, []int{1}}, {"far", 10, []int{2}}}},
		{"versions bound forces the oldest out", Bound{MaxVersions: 2}, []send{{"far", 0, 1}, {"far", 0, 2}, {"far", 0, 3}, {"far", 0, 4}},
			[]due{{"far", 1, []int{1, 2}}, {"far", 10, []int{3, 4}}}},
		{"age bound forces what is older", Bound{MaxAge: 3 * time.Second}, []send{{"far", 0, 1}, {"far", 2, 2}},
			[]due{{"far", 2.9, nil}, {"far", 3, []int{1}}, {"far", 5, []int{2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New[int](lag, tc.bound)
			for _, x := range tc.sends {
				s.Send("hub", x.to, at(x.written), x.v)
			}
			for _, d := range tc.dues {
				if got := s.Due(d.to, at(d.now)); !slices.Equal(got, d.want) {
					t.Errorf("Due(%s, %v) = %v, want %v", d.to, d.now, got, d.want)
				}
			}
		})
	}
}

// TestOrderKept: a change whose lag is shorter than the one ahead of it
// waits for it.
func TestOrderKept(t *testing.T) {
	lags := []time.Duration{5 * time.Second, time.Second}
	i := 0
	s := New[int](func(string, string) time.Duration { i++; return lags[i-1] }, Bound{})
	s.Send("a", "b", at(0), 1)
	s.Send("a", "b", at(0), 2)
	if got := s.Due("b", at(2)); got != nil {
		t.Fatalf("Due at 2s = %v, want nothing: 2 waits for 1", got)
	}
	if got := s.Due("b", at(5)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("Due at 5s = %v, want [1 2]", got)
	}
}

func TestAllNextPending(t *testing.T) {
	s := New[int](func(string, string) time.Duration { return 4 * time.Second }, Bound{MaxAge: 2 * time.Second})
	if _, ok := s.Next(); ok {
		t.Fatal("Next reports a change in an empty scheduler")
	}
	s.Send("a", "b", at(1), 1)
	s.Send("a", "c", at(0), 2)
	if next, ok := s.Next(); !ok || !next.Equal(at(2)) {
		t.Fatalf("Next = %v %v, want 2s (c's change forced by the bound)", next, ok)
	}
	if n, oldest := s.Pending("b"); n != 1 || !oldest.Equal(at(1)) {
		t.Fatalf("Pending(b) = %d %v", n, oldest)
	}
	if got := s.All("b"); !slices.Equal(got, []int{1}) {
		t.Fatalf("All(b) = %v", got)
	}
	if n, _ := s.Pending("b"); n != 0 {
		t.Fatalf("Pending(b) after All = %d", n)
	}
	if got := s.All("b"); got != nil {
		t.Fatalf("All(b) again = %v", got)
	}
}

func TestDrop(t *testing.T) {
	s := New[int](nil, Bound{})
	for v := range 5 {
		s.Send("a", "b", at(0), v)
	}
	s.Send("a", "c", at(0), 10)
	s.Drop(func(v int) bool { return v%2 == 1 || v == 10 })
	if got := s.All("b"); !slices.Equal(got, []int{0, 2, 4}) {
		t.Fatalf("b after Drop: %v", got)
	}
	if n, _ := s.Pending("c"); n != 0 {
		t.Fatalf("c after Drop: %d pending", n)
	}
}
