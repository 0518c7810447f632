package query

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFromGoVectors: a []float64 or []float32 parameter becomes what its
// JSON would (the fast path gives the JSON path's values), and NaN or an
// infinity cannot be represented.
func TestFromGoVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 26))
	f64 := []float64{0, math.Copysign(0, -1), 0.1, 1e-300, 1e300, -3.5}
	f32 := []float32{0, 0.1, 1e-30, 3.4e38, -3.5, float32(math.SmallestNonzeroFloat32)}
	for range 200 {
		f64 = append(f64, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)))
		f32 = append(f32, float32(rng.NormFloat64()))
	}
	for _, x := range []any{f64, f32} {
		got, ok := fromGo(x, 0)
		b, err := json.Marshal(x)
		if err != nil || !ok {
			t.Fatal(err, ok)
		}
		want := decodeRaw(b)
		if len(got.a) != len(want.a) {
			t.Fatalf("%T: %d elements, want %d", x, len(got.a), len(want.a))
		}
		for i := range got.a {
			if g, w := got.a[i].n, want.a[i].n; math.Float64bits(g) != math.Float64bits(w) {
				t.Errorf("%T[%d]: %v, JSON gives %v", x, i, g, w)
			}
		}
	}
	for _, x := range []any{[]float64{1, math.NaN()}, []float64{math.Inf(1)}, []float32{float32(math.Inf(-1))}} {
		if _, ok := fromGo(x, 0); ok {
			t.Errorf("%v: represented", x)
		}
	}
}
