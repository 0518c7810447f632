package lethe

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestDecimal checks decimalLen and putDecimal against strconv at every
// power of ten and its neighbours, at the ends of int64, and at random.
func TestDecimal(t *testing.T) {
	t.Parallel()
	var ns []int64
	for p := int64(1); ; p *= 10 {
		ns = append(ns, p-1, p, p+1, -p+1, -p, -p-1)
		if p > math.MaxInt64/10 {
			break
		}
	}
	ns = append(ns, 0, math.MaxInt64, math.MinInt64, math.MinInt64+1)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ns = append(ns, int64(rng.Uint64()), int64(rng.Uint64()>>rng.IntN(64)))
	}
	for _, n := range ns {
		want := strconv.FormatInt(n, 10)
		if got := decimalLen(n); got != len(want) {
			t.Fatalf("decimalLen(%d) = %d, want %d", n, got, len(want))
		}
		b := make([]byte, len(want))
		putDecimal(b, n)
		if string(b) != want {
			t.Fatalf("putDecimal(%d) = %q, want %q", n, b, want)
		}
	}
}

// TestEightDigits checks eightDigits against strconv with every four-digit
// value in each of its two halves, and at random.
func TestEightDigits(t *testing.T) {
	t.Parallel()
	check := func(x uint32) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], eightDigits(x))
		if want := fmt.Sprintf("%08d", x); string(b[:]) != want {
			t.Fatalf("eightDigits(%d) = %q, want %q", x, b, want)
		}
	}
	for a := range uint32(10000) {
		check(a*10000 + (a*7919)%10000)
		check(a*10000 + 9999 - a)
		check((a*7919)%10000*10000 + a)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		check(rng.Uint32N(1e8))
	}
}

// TestAppendJSONRendering checks the document reads return against
// literal renderings: the body, then "_ts" (whole seconds, rounded down,
// before 1970 too) and "_etag" (the sequence number, 0xabc, in 16 hex
// digits), appended after what dst holds, for an empty and a non-empty
// body.
func TestAppendJSONRendering(t *testing.T) {
	t.Parallel()
	const etag = `"_etag":"0000000000000abc"}`
	for _, body := range []struct{ json, open string }{
		{`{}`, `{`},
		{`{"id":"a","n":1}`, `{"id":"a","n":1,`},
	} {
		for _, tc := range []struct {
			written int64 // nanoseconds since 1970
			ts      string
		}{
			{0, "0"},
			{1, "0"},
			{999_999_999, "0"},
			{1e9, "1"},
			{-1, "-1"},
			{-1e9, "-1"},
			{-1e9 - 1, "-2"},
			{1_700_000_000_123_456_789, "1700000000"},
			{math.MinInt64, "-9223372037"},
			{math.MaxInt64, "9223372036"},
		} {
			rec := buildRecordFrom([]byte(body.json), "a", TTLOff, len(body.json), "", tc.written, 0xabc, 1)
			want := `prefix` + body.open + `"_ts":` + tc.ts + `,` + etag
			got := rec.appendJSON([]byte("prefix"))
			if string(got) != want {
				t.Fatalf("written %d: appendJSON = %s, want %s", tc.written, got, want)
			}
			if rec.jsonLen() != len(want)-len("prefix") || string(rec.jsonBytes()) != want[len("prefix"):] {
				t.Fatalf("written %d: jsonLen %d, jsonBytes %s, want %s", tc.written, rec.jsonLen(), rec.jsonBytes(), want)
			}
		}
	}
}

// BenchmarkAppendJSON renders a bench-sized document with its _ts and
// _etag into a reused buffer, as ReadItemAppend does.
func BenchmarkAppendJSON(b *testing.B) {
	body := `{"id":"user-12345678","name":"ada lovelace","email":"ada@example.com","status":"active","age":36,"bio":"` +
		`storage expiry latency queue cache index shard reaper cosmos tenant region replica storage expiry latency queue cache"}`
	rec := buildRecordFrom([]byte(body), "user-12345678", TTLOff, len(body), "", 1_764_000_000_123_456_789, 0x1234, 1)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = rec.appendJSON(buf[:0])
	}
}

// TestRecordETagHex: the ETag is the sequence number in 16 lower-case hex
// digits, and seq reads it back.
func TestRecordETagHex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seq  uint64
		etag string
	}{
		{0, "0000000000000000"},
		{1, "0000000000000001"},
		{0xab, "00000000000000ab"},
		{0x0123456789abcdef, "0123456789abcdef"},
		{0xfedcba9876543210, "fedcba9876543210"},
		{1<<64 - 1, "ffffffffffffffff"},
	} {
		r := buildRecordFrom([]byte(`{}`), "a", TTLOff, 0, "", 1, tc.seq, 1)
		if r.etag() != tc.etag || r.seq() != tc.seq {
			t.Errorf("seq %#x: etag %q seq %#x, want %q", tc.seq, r.etag(), r.seq(), tc.etag)
		}
	}
}

// TestRecordSeqBefore: comparing two versions' ETags as words orders them
// as their sequence numbers do, for numbers that differ in either half,
// in one digit's letter or figure, and at the extremes.
func TestRecordSeqBefore(t *testing.T) {
	t.Parallel()
	seqs := []uint64{0, 1, 9, 0xa, 0xf, 0x10, 0x9f, 0xa0, 1 << 32, 1<<32 - 1, 0x9_0000_0000, 0xa_0000_0000,
		0x0123456789abcdef, 0xfedcba9876543210, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		seqs = append(seqs, r.Uint64(), r.Uint64()>>r.IntN(64))
	}
	recs := make([]record, len(seqs))
	for i, seq := range seqs {
		recs[i] = buildRecordFrom([]byte(`{}`), fmt.Sprint("id", i), TTLOff, 0, "", 1, seq, 1)
	}
	for i := range seqs {
		for j := range seqs {
			if got, want := recs[i].seqBefore(recs[j]), seqs[i] < seqs[j]; got != want {
				t.Fatalf("seqBefore(%#x, %#x) = %v, want %v", seqs[i], seqs[j], got, want)
			}
		}
	}
}
