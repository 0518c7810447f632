package lethe

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// parseItemSeeds are the seeds of the item parser's fuzz tests.
var parseItemSeeds = []string{
	`{"id":"a"}`, `{"id":"a","ttl":5}`, `{"id":"a","ttl":null,"x":[1,{"y":"z"}]}`, ` {"_ts":1,"id":"\u00e9"} `,
	`{"id":"a","ttl":1.5}`, `{"id":1}`, `[]`, `{"id":"a",}`, `{"id":"\ud83d\ude00","n":-0.5e-3}`, `{"id":"a","id":"b"}`,
	`{"id":"a\"b","s":"\\\/\b\f\n\r\t"}`, strings.Repeat("[", 200), `{"id":"\ud800"}`, `{"id":"a","k\udc00":1}`,
	`{"id":"a","v":"\ud800"}`, `{"id":"a","ttl":10e-1}`, `{"id":"a","ttl":1.0000000000000001}`, `{"id":"a","n":1e400}`,
	`{"id":"a","n":[1e-400]}`, `{"id":"a","o":{"k":1,"\u006b":2}}`, `{"id":"a","o":{"k":1,"j":{"k":2}}}`,
	// Names that decode to a known name and a zero byte are other names.
	`{"id\u0000":"x"}`, `{"id":"a","id\u0000":"b"}`, `{"id":"a","ttl\u0000":5}`, `{"id":"a","_ts\u0000":7}`,
	`{"id":"a","_etag\u0000\u0000":"e"}`, `{"\u0069d":"a","t\u0074l":5}`,
}

// FuzzParseItem checks the single-pass item parser against referenceItem,
// which decides with encoding/json, strconv and math/big: it never panics,
// accepts exactly the items the reference accepts, and finds the same id
// and ttl; the stored form is valid JSON with the same members and values.
func FuzzParseItem(f *testing.F) {
	for _, seed := range parseItemSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, perr := parseItem(doc)
		id, ttl, ok := referenceItem(doc)
		if perr != nil {
			if ok {
				t.Fatalf("%q refused (%v); the reference accepts it", doc, perr)
			}
			if want := statusBadRequest; len(doc) > MaxItemSize {
				want = statusRequestEntityTooLarge
			} else if perr.StatusCode != want {
				t.Fatalf("%q: status %d", doc, perr.StatusCode)
			}
			return
		}
		if !ok {
			t.Fatalf("%q accepted (id %q, ttl %v); the reference refuses it", doc, p.id, p.ttl)
		}
		if p.id != id || p.ttl != ttl {
			t.Fatalf("%q: id %q ttl %v; the reference says %q, %v", doc, p.id, p.ttl, id, ttl)
		}
		// The stored form is valid JSON with the same members and values.
		var obj map[string]any
		if err := json.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		rec := buildRecord(doc, &p, "", 1_700_000_000_000_000_000, 7, 1)
		var stored map[string]any
		if err := json.Unmarshal(rec.jsonBytes(), &stored); err != nil {
			t.Fatalf("stored form %q of %q is not JSON: %v", rec.jsonBytes(), doc, err)
		}
		for _, m := range []map[string]any{obj, stored} {
			delete(m, "_ts")
			delete(m, "_etag")
		}
		if !reflect.DeepEqual(obj, stored) {
			t.Fatalf("stored form %q of %q has other members or values", rec.jsonBytes(), doc)
		}
	})
}

// referenceItem decides, with encoding/json's tokenizer, strconv and
// math/big rather than the scanner, whether parseItem must accept doc, and
// the id and ttl it must find. The rules: at most MaxItemSize bytes of valid
// JSON and UTF-8; an object nested at most MaxDepth deep; no object with two
// members of one (decoded) name; no lone surrogate escape in a member name
// or the id; no number beyond a float64; a string id that validateItemID
// accepts; a ttl that is null, -1 or an integer from 1 to MaxTTL.
func referenceItem(doc []byte) (id string, ttl TTL, ok bool) {
	if len(doc) > MaxItemSize || !utf8.Valid(doc) || !json.Valid(doc) {
		return "", 0, false
	}
	type frame struct {
		object, wantName bool
		names            map[string]bool
		name             string // of the member whose value comes next
	}
	var stack []frame
	haveID := false
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, false
		}
		raw := doc[before:dec.InputOffset()]
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantName {
			name := tok.(string)
			if hasLoneSurrogate(raw) || top.names[name] {
				return "", 0, false
			}
			top.names[name] = true
			top.name, top.wantName = name, false
			continue
		}
		member := "" // the item's own member this value is of
		if top != nil && top.object {
			top.wantName = true
			if len(stack) == 1 {
				member = top.name
			}
		}
		if d, isDelim := tok.(json.Delim); top == nil && (!isDelim || d != '{') {
			return "", 0, false // not an object
		}
		switch t := tok.(type) {
		case json.Delim: // '{' or '['
			if member == "id" || member == "ttl" {
				return "", 0, false
			}
			stack = append(stack, frame{object: t == '{', wantName: t == '{', names: map[string]bool{}})
			if len(stack) > MaxDepth {
				return "", 0, false
			}
		case string:
			if member == "ttl" || (member == "id" && hasLoneSurrogate(raw)) {
				return "", 0, false
			}
			if member == "id" {
				id, haveID = t, true
			}
		case json.Number:
			if f, _ := strconv.ParseFloat(string(t), 64); math.IsInf(f, 0) || member == "id" {
				return "", 0, false
			}
			if member == "ttl" {
				if ttl, ok = referenceTTL(string(t), len(doc)); !ok {
					return "", 0, false
				}
			}
		case bool:
			if member == "id" || member == "ttl" {
				return "", 0, false
			}
		case nil:
			if member == "id" {
				return "", 0, false
			}
		}
	}
	if !haveID || validateItemID(id) != nil {
		return "", 0, false
	}
	return id, ttl, true
}

// referenceTTL is the ttl a JSON number means, by exact arithmetic. An
// exponent beyond the number of digits an item of size n can hold, plus 20,
// puts a non-zero value above MaxTTL or below 1; zero is no ttl either.
func referenceTTL(num string, n int) (TTL, bool) {
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		exp := strings.TrimLeft(strings.TrimLeft(num[i+1:], "+-"), "0")
		if len(exp) > 9 {
			return 0, false
		}
		if e, _ := strconv.Atoi(exp); e > n+20 {
			return 0, false
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	if v := r.Num().Int64(); v == -1 || (v >= 1 && v <= int64(MaxTTL)) {
		return TTL(v), true
	}
	return 0, false
}

// hasLoneSurrogate reports whether the string token in raw (between its
// first and last quote) has a \u escape of a surrogate that UTF-16 decoding
// cannot pair: decoded to code units, utf16.Decode makes more U+FFFD of
// them than they hold.
func hasLoneSurrogate(raw []byte) bool {
	raw = raw[bytes.IndexByte(raw, '"')+1 : bytes.LastIndexByte(raw, '"')]
	var units []uint16
	for i := 0; i < len(raw); {
		switch {
		case raw[i] == '\\' && raw[i+1] == 'u':
			u, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			units = append(units, uint16(u))
			i += 6
		case raw[i] == '\\':
			units = append(units, uint16(raw[i+1]))
			i += 2
		default:
			r, n := utf8.DecodeRune(raw[i:])
			units = utf16.AppendRune(units, r)
			i += n
		}
	}
	in, out := 0, 0
	for _, u := range units {
		if u == utf8.RuneError {
			in++
		}
	}
	for _, r := range utf16.Decode(units) {
		if r == utf8.RuneError {
			out++
		}
	}
	return out > in
}

// TestParseItemAcceptsValid: valid objects with a good id are accepted,
// whatever their whitespace and escapes.
func TestParseItemAcceptsValid(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"id":"a"}`, " \t\n{ \"id\" : \"a\" , \"x\" : [ ] , \"y\" : { } }\r\n", `{"i\u0064":"a"}`,
		`{"id":"a","n":[0,-0,1.25e+10,1E-5,-12.5,true,false,null,"\u0041"]}`, `{"id":"a","ttl":-1}`,
	} {
		p, err := parseItem([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if p.id != "a" {
			t.Fatalf("%q: id %q", doc, p.id)
		}
	}
}

// TestItemTTLLongSpellings: a ttl's integrality and range are decided in
// time linear in its text, whatever its length.
func TestItemTTLLongSpellings(t *testing.T) {
	zeros := strings.Repeat("0", 2_000_000)
	for _, tc := range []struct {
		ttl  string
		want TTL // 0: refused
	}{
		{"1." + zeros[:1_000_000], 1}, {"1." + zeros, 1}, {"-1." + zeros, -1}, {"1." + zeros + "e0", 1},
		{"0.0" + zeros + "1e2000003", 10}, {"1" + zeros[:9] + "e-9", 1}, {"2147483647." + zeros, MaxTTL},
		{"1." + zeros + "1", 0}, {"1" + zeros, 0}, {"0." + zeros, 0}, {"1." + zeros + "e-1", 0},
		{"1." + zeros[:1_000_000] + "e1000000", 0}, {"-2." + zeros, 0},
	} {
		start := time.Now()
		p, err := parseItem([]byte(`{"id":"a","ttl":` + tc.ttl + `}`))
		if d := time.Since(start); d > 3*time.Second { // linear: milliseconds; the quadratic parser took many seconds
			t.Errorf("%.20s...: %v to parse", tc.ttl, d)
		}
		if tc.want == 0 {
			if err == nil || !strings.Contains(err.Message, "The input ttl") {
				t.Errorf("%.20s... (%d bytes): accepted as %v, or %v", tc.ttl, len(tc.ttl), p.ttl, err)
			}
			continue
		}
		if err != nil || p.ttl != tc.want {
			t.Errorf("%.20s... (%d bytes): %v, %v; want %v", tc.ttl, len(tc.ttl), p.ttl, err, tc.want)
		}
	}
}

// TestParseItemTTL: integral values in any spelling are accepted, others
// refused, as an exact decimal reading (math/big) decides.
func TestParseItemTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl  string
		want TTL // 0: refused
	}{
		{"1", 1}, {"1e0", 1}, {"10e-1", 1}, {"0.1e1", 1}, {"-1.0", -1}, {"-1", -1}, {"-10e-1", -1}, {"-0.1E+1", -1},
		{"1.000", 1}, {"100000e-5", 1}, {"2.147483647E+9", MaxTTL}, {"2147483647", MaxTTL}, {"0.0000000002147483647e19", MaxTTL},
		{"1e00000000000000000000000000", 1}, {"3600", 3600}, {"36e2", 3600}, {"0.00036e7", 3600},
		{"1.5", 0}, {"0", 0}, {"-0", 0}, {"0.0", 0}, {"0e5", 0}, {"2147483648", 0}, {"1.0000000000000001", 0}, {"-2", 0},
		{"-1.5", 0}, {"-0.1", 0}, {"1e-1", 0}, {"1e10", 0}, {"21474836470e-1", MaxTTL}, {"21474836471e-1", 0},
		{"1e999999999999999999999", 0}, {"1e-999999999999999999999", 0}, {"99999999999999999999", 0},
		{"", 0}, {"-", 0}, {"1.", 0}, {"1e", 0}, {"x", 0}, {"1x", 0}, {".5", 0}, {"1.5.5", 0}, {"--1", 0},
	} {
		got, err := parseItemTTL([]byte(tc.ttl))
		if (err == nil) != (tc.want != 0) || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.ttl, got, err, tc.want)
		}
	}
	// Every spelling of a few values, against math/big.
	for _, mant := range []string{"0", "1", "5", "15", "2147483647", "2147483648", "1000", "123456789012345678901234567890"} {
		for _, point := range []int{-1, 0, 1, 2, 5, 12} {
			for _, exp := range []string{"", "e0", "e1", "E+2", "e-1", "e-3", "e10", "e-30", "e0009"} {
				for _, neg := range []string{"", "-"} {
					num := mant
					if point >= 0 && point <= len(mant) && point > 0 {
						num = mant[:point] + "." + mant[point:]
						if point == len(mant) {
							num += "0"
						}
					} else if point > len(mant) {
						num = mant + "." + strings.Repeat("0", point)
					}
					num = neg + num + exp
					if !json.Valid([]byte(num)) {
						continue
					}
					want := TTL(0)
					if r, ok := new(big.Rat).SetString(num); ok && r.IsInt() && r.Num().IsInt64() {
						if n := r.Num().Int64(); n == -1 || (n >= 1 && n <= int64(MaxTTL)) {
							want = TTL(n)
						}
					}
					got, err := parseItemTTL([]byte(num))
					if (err == nil) != (want != 0) || got != want {
						t.Errorf("%q: %v, %v; want %v", num, got, err, want)
					}
				}
			}
		}
	}
}

// TestDuplicateNameAnywhere refuses a repeated name whatever its place
// among up to 40 others (the listed names and their slots, then the map),
// at the top level and nested, and accepts the same objects without it.
func TestDuplicateNameAnywhere(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 40; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = `"` + strings.Repeat("k", i%3+1) + strconv.Itoa(i) + `"`
		}
		obj := func(extra string) string {
			var b strings.Builder
			b.WriteString("{")
			for i, name := range names {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(name + ":1")
			}
			return b.String() + extra + "}"
		}
		for _, wrap := range []func(string) string{
			func(o string) string { return `{"id":"a",` + o[1:] },
			func(o string) string { return `{"id":"a","o":` + o + `}` },
		} {
			if _, err := parseItem([]byte(wrap(obj("")))); err != nil {
				t.Fatalf("%d names: %v", n, err)
			}
			for i := range names {
				doc := wrap(obj("," + names[i] + ":2"))
				if _, err := parseItem([]byte(doc)); err == nil || !strings.Contains(err.Message, "twice") {
					t.Fatalf("%s: the name %s twice accepted (%v)", doc, names[i], err)
				}
			}
		}
	}
}
