package epk

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestHash checks the effective partition keys against those of
// @azure/cosmos 4.9.3's own routing code (utils/hashing/hash.js's
// hashPartitionKey, run once under node over these values): version 2
// (strings of every length class of the hash's blocks, numbers, booleans,
// null, undefined), version 1 (strings past its 100-character cut, in one
// and two bytes a character) and hierarchical keys.
func TestHash(t *testing.T) {
	tests := []struct {
		kind string
		vals []Value
		want string
	}{
		{"v2", []Value{{Kind: String, String: ""}}, "32E9366E637A71B4E710384B2F4970A0"},
		{"v2", []Value{{Kind: String, String: "a"}}, "3A5381E1114EB8D3FCC90795045B49B7"},
		{"v2", []Value{{Kind: String, String: "hello"}}, "0A8B5792B7BA3C7C47B0D1305A3C6F8A"},
		{"v2", []Value{{Kind: String, String: "héllo"}}, "029ACA93BF00D120BC875CAD8F9A5F01"},
		{"v2", []Value{{Kind: String, String: "日本語"}}, "3F0624929BDE45571F050DCA6A1CB775"},
		{"v2", []Value{{Kind: String, String: "😀"}}, "28D7FCB721E75FBE0DAC3D71DAB82766"},
		{"v2", []Value{{Kind: String, String: "abcdefghijklmn"}}, "39016C7D1A003897FC0B590E330A687E"},
		{"v2", []Value{{Kind: String, String: "abcdefghijklmnopqrstuvwxyz0123"}}, "0A34D1E0A74F1928DC0083FE508BBBD7"},
		{"v2", []Value{{Kind: String, String: strings.Repeat("x", 150)}}, "165D5EACD9E5ED8FE2683C0B57ED57CC"},
		{"v2", []Value{{Kind: Number, Number: 0}}, "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{"v2", []Value{{Kind: Number, Number: 1}}, "20CD98B339BA78A5D0CF6953B87070B0"},
		{"v2", []Value{{Kind: Number, Number: -1}}, "19938E7A936C1C5B9E3AE842BBC16839"},
		{"v2", []Value{{Kind: Number, Number: 1.5}}, "35C5DDEB6C795D16A9963C73C54E97BC"},
		{"v2", []Value{{Kind: Number, Number: -123.456}}, "1757D540B589DD9962861CED15A7DA57"},
		{"v2", []Value{{Kind: Number, Number: 9007199254740992.0}}, "15335910D01122E3D99DA5DE569B065D"},
		{"v2", []Value{{Kind: Number, Number: 1e+308}}, "1E0D61F83E0EBE180144F756FA5C918A"},
		{"v2", []Value{{Kind: True}}, "0E711127C5B5A8E4726AC6DD306A3E59"},
		{"v2", []Value{{Kind: False}}, "2FE1BE91E90A3439635E0E9E37361EF2"},
		{"v2", []Value{{Kind: Null}}, "378867E4430E67857ACE5C908374FE16"},
		{"v2", []Value{{Kind: Undefined}}, "11622DAA78F835834610ABE56EFF5CB5"},
		{"v1", []Value{{Kind: String, String: ""}}, "05C1CF33970FF80800"},
		{"v1", []Value{{Kind: String, String: "a"}}, "05C1D78593652C086200"},
		{"v1", []Value{{Kind: String, String: "hello"}}, "05C1EFF74961FE0869666D6D7000"},
		{"v1", []Value{{Kind: String, String: "héllo"}}, "05C1CF2F2395980869C4AA6D6D7000"},
		{"v1", []Value{{Kind: String, String: "😀"}}, "05C1814D5F9C08F1A0998100"},
		{"v1", []Value{{Kind: String, String: strings.Repeat("x", 150)}}, "05C1DD45A3938C087979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797900"},
		{"v1", []Value{{Kind: String, String: strings.Repeat("é", 120)}}, "05C1D9C91DF1D808C4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AAC4AA00"},
		{"v1", []Value{{Kind: Number, Number: 0}}, "05C1BF6DA115600580"},
		{"v1", []Value{{Kind: Number, Number: 1}}, "05C1ED172B6B2605BFF0"},
		{"v1", []Value{{Kind: Number, Number: -1}}, "05C1D1A5BDDF9C054010"},
		{"v1", []Value{{Kind: Number, Number: 1.5}}, "05C1E9694167A805BFF8"},
		{"v1", []Value{{Kind: Number, Number: -123.456}}, "05C1AF3FFB9F60053FA191B51D57030712"},
		{"v1", []Value{{Kind: Number, Number: 1e+308}}, "05C145CFAE05FFE1E73D715F5F2340"},
		{"v1", []Value{{Kind: True}}, "05C1D7C5A903D803"},
		{"v1", []Value{{Kind: False}}, "05C1DB857D857C02"},
		{"v1", []Value{{Kind: Null}}, "05C1ED45D7475601"},
		{"v1", []Value{{Kind: Undefined}}, "05C1D529E345DC00"},
		{"multi", []Value{{Kind: String, String: "a"}}, "3A5381E1114EB8D3FCC90795045B49B7"},
		{"multi", []Value{{Kind: String, String: "tenant1"}, {Kind: String, String: "user1"}}, "0DAE0B8467B011E957BC0B8B0DEB5ACA236A5BE3329A7AD57D4B998E8602BD7B"},
		{"multi", []Value{{Kind: String, String: "a"}, {Kind: Number, Number: 1}, {Kind: True}}, "3A5381E1114EB8D3FCC90795045B49B720CD98B339BA78A5D0CF6953B87070B00E711127C5B5A8E4726AC6DD306A3E59"},
		{"multi", []Value{{Kind: Null}, {Kind: Undefined}, {Kind: False}}, "378867E4430E67857ACE5C908374FE1611622DAA78F835834610ABE56EFF5CB52FE1BE91E90A3439635E0E9E37361EF2"},
	}
	for _, tt := range tests {
		got := Hash(map[string]int{"v1": 1, "v2": 2, "multi": 2}[tt.kind], tt.kind == "multi", tt.vals)
		if got != tt.want {
			t.Errorf("%s %v: got %s, want %s", tt.kind, tt.vals, got, tt.want)
		}
	}
}

// TestHashNoComponents: a key without components is Min, in every
// version.
func TestHashNoComponents(t *testing.T) {
	for _, v := range []int{1, 2} {
		for _, multi := range []bool{false, true} {
			if got := Hash(v, multi, nil); got != Min {
				t.Errorf("Hash(%d, %v, nil) = %q, want Min", v, multi, got)
			}
		}
	}
}

// TestPrefixRange: every key of a hierarchical key's prefix lies in the
// prefix's range, and keys of another prefix do not.
func TestPrefixRange(t *testing.T) {
	prefix := []Value{{Kind: String, String: "tenant1"}}
	lo, hi := PrefixRange(prefix)
	for _, user := range []string{"", "a", "user1", strings.Repeat("z", 300)} {
		k := MultiHash(append(prefix, Value{Kind: String, String: user}, Value{Kind: Number, Number: 3}))
		if !InRange(k, lo, hi) {
			t.Errorf("key of tenant1/%s %s outside its prefix's range [%s, %s)", user, k, lo, hi)
		}
	}
	other := MultiHash([]Value{{Kind: String, String: "tenant2"}, {Kind: String, String: "user1"}})
	if InRange(other, lo, hi) {
		t.Errorf("key of tenant2 %s inside tenant1's range", other)
	}
	if full := MultiHash(prefix); !InRange(full, lo, hi) {
		t.Errorf("the prefix's own key %s outside its range", full)
	}
}

// TestBounds: the bounds are in order, inside (Min, Max), split the keys
// of random values about evenly, and for version 1 agree with the order
// of the hashes they encode (the encoding preserves order).
func TestBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		version int
		multi   bool
	}{{2, false}, {2, true}, {1, false}} {
		for _, n := range []int{2, 3, 4, 5, 7, 16} {
			b := Bounds(tc.version, tc.multi, n)
			if len(b) != n-1 {
				t.Fatalf("Bounds(%d, %v, %d) has %d bounds", tc.version, tc.multi, n, len(b))
			}
			all := append(append([]string{Min}, b...), Max)
			for i := 1; i < len(all); i++ {
				if all[i-1] >= all[i] {
					t.Fatalf("Bounds(%d, %v, %d) out of order: %q", tc.version, tc.multi, n, all)
				}
			}
			counts := make([]int, n)
			const keys = 20000
			for range keys {
				v := []Value{{Kind: String, String: randString(r)}}
				k := Hash(tc.version, tc.multi, v)
				found := 0
				for i := range n {
					if InRange(k, all[i], all[i+1]) {
						counts[i]++
						found++
					}
				}
				if found != 1 {
					t.Fatalf("key %s is in %d ranges of %q", k, found, all)
				}
			}
			for i, c := range counts {
				if c < keys/n*8/10 || c > keys/n*12/10 {
					t.Errorf("version %d multi %v, %d ranges: range %d holds %d of %d keys", tc.version, tc.multi, n, i, c, keys)
				}
			}
		}
	}
}

// TestBoundsNone: one range has no bounds.
func TestBoundsNone(t *testing.T) {
	if b := Bounds(2, false, 1); b != nil {
		t.Errorf("Bounds(2, false, 1) = %q", b)
	}
}

func randString(r *rand.Rand) string {
	b := make([]byte, 1+r.IntN(20))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// TestMid: a split's key lies strictly inside its range and halves the
// hash space (random keys fall half on each side), in every version, and a
// range too narrow to divide has none.
func TestMid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		version int
		multi   bool
	}{{2, false}, {2, true}, {1, false}} {
		for _, n := range []int{1, 2, 3} {
			all := append(append([]string{Min}, Bounds(tc.version, tc.multi, n)...), Max)
			for i := range n {
				lo, hi := all[i], all[i+1]
				mid, ok := Mid(tc.version, tc.multi, lo, hi)
				if !ok || !(lo < mid) || !(mid < hi) {
					t.Fatalf("v%d multi %v: Mid(%q, %q) = %q, %v", tc.version, tc.multi, lo, hi, mid, ok)
				}
				below, in := 0, 0
				for range 20000 {
					k := Hash(tc.version, tc.multi, []Value{{Kind: String, String: randString(r)}})
					if InRange(k, lo, hi) {
						in++
						if k < mid {
							below++
						}
					}
				}
				if tc.version == 2 && (below < in*4/10 || below > in*6/10) {
					t.Errorf("v%d multi %v: [%q, %q) split at %s: %d of %d keys below", tc.version, tc.multi, lo, hi, mid, below, in)
				}
			}
		}
	}
	if mid, ok := Mid(2, false, "1000000000000000", "1000000000000001"); ok {
		t.Errorf("a range of one point split at %q", mid)
	}
}
