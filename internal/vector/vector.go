// Package vector is lethe's vector search: the distance functions of
// Cosmos DB's VectorDistance (cosine, dotproduct, euclidean) and its
// element types (float32, float16, int8, uint8), over vectors of float32
// values, exact (Metric.Score: products summed in float64, in order); a
// Store of vectors that one writer appends to and removes from while
// readers read it with no lock, each at a version; and a Graph (HNSW), an
// approximate nearest-neighbour index of a store's vectors, whose float32
// distances use AVX2 and FMA where the processor has them; and Bounds,
// which brackets an exact score from those float32 distances, so that an
// exact search compares exactly only the vectors that may be nearest.
package vector

import (
	"math"
	"strconv"
	"strings"
)

// Metric is a distance function.
type Metric uint8

// The distance functions of Cosmos DB.
const (
	Cosine     Metric = iota // cosine similarity: -1 (least similar) to 1 (most similar)
	DotProduct               // dot product: -inf (least similar) to +inf (most similar)
	Euclidean                // euclidean distance: 0 (most similar) to +inf (least similar)
)

var metricNames = [...]string{Cosine: "cosine", DotProduct: "dotproduct", Euclidean: "euclidean"}

// ParseMetric returns the metric named s, in any case.
func ParseMetric(s string) (Metric, bool) {
	for m, n := range metricNames {
		if strings.EqualFold(s, n) {
			return Metric(m), true
		}
	}
	return Cosine, false
}

// String returns the metric's name as a vector embedding policy writes it.
func (m Metric) String() string { return metricNames[m] }

// HigherIsCloser reports whether a higher score means more similar vectors
// (cosine and dot product); for the euclidean distance a lower one does.
func (m Metric) HigherIsCloser() bool { return m != Euclidean }

// Score compares a and b: their cosine similarity, dot product or
// euclidean distance. ok is false when they cannot be compared: their
// lengths differ, they are empty, or (cosine) one of them is zero.
// Products are summed in float64, in order: Dot, SumSquares and Cosine
// give the same values bit for bit.
func (m Metric) Score(a, b []float32) (s float64, ok bool) {
	if len(a) != len(b) || len(a) == 0 {
		return 0, false
	}
	switch m {
	case DotProduct:
		return Dot(a, b), true
	case Euclidean:
		b = b[:len(a)]
		var sum float64
		for i, x := range a {
			d := float64(x) - float64(b[i])
			sum += d * d
		}
		return math.Sqrt(sum), true
	}
	return CosineOf(Dot(a, b), SumSquares(a), SumSquares(b))
}

// Dot returns the dot product of a and b (b at least as long as a),
// summed in float64 in order.
func Dot(a, b []float32) float64 {
	b = b[:len(a)]
	var dot float64
	for i, x := range a {
		dot += float64(x) * float64(b[i])
	}
	return dot
}

// SumSquares returns the sum of the squares of a's elements, in float64 in
// order: what Cosine divides by, kept by a vector index for each vector.
func SumSquares(a []float32) float64 {
	var sum float64
	for _, x := range a {
		sum += float64(x) * float64(x)
	}
	return sum
}

// CosineOf returns the cosine similarity of two vectors from their dot
// product and their sums of squares; ok is false when one of them is zero.
func CosineOf(dot, na, nb float64) (float64, bool) {
	if na == 0 || nb == 0 {
		return 0, false
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb)), true
}

// Type is the type of a vector's elements.
type Type uint8

// The element types of Cosmos DB.
const (
	Float32 Type = iota
	Float16
	Int8
	Uint8
)

var typeNames = [...]string{Float32: "float32", Float16: "float16", Int8: "int8", Uint8: "uint8"}

// ParseType returns the element type named s, in any case.
func ParseType(s string) (Type, bool) {
	for t, n := range typeNames {
		if strings.EqualFold(s, n) {
			return Type(t), true
		}
	}
	return Float32, false
}

// String returns the type's name as a vector embedding policy writes it.
func (t Type) String() string { return typeNames[t] }

// Element converts a JSON number to an element of type t: rounded to the
// nearest float32 or float16; for int8 and uint8 an integer in their range.
// ok is false when x is not one: an integer type's value that is not an
// integer or out of range, a float beyond the type's largest finite value.
func (t Type) Element(x float64) (float32, bool) {
	switch t {
	case Int8:
		return float32(x), x == math.Trunc(x) && x >= math.MinInt8 && x <= math.MaxInt8
	case Uint8:
		return float32(x), x == math.Trunc(x) && x >= 0 && x <= math.MaxUint8
	case Float16:
		f, ok := toFloat16(x)
		return f, ok
	}
	f := float32(x)
	return f, !math.IsInf(float64(f), 0) && !math.IsNaN(x)
}

// maxFloat16 is the largest finite IEEE half-precision value.
const maxFloat16 = 65504

// toFloat16 rounds x to the nearest half-precision value (ties to even), as
// a float32: half precision keeps 11 significant bits, and numbers below
// 2^-14 keep their bits above 2^-24 (subnormals).
func toFloat16(x float64) (float32, bool) {
	if math.IsNaN(x) || math.Abs(x) > maxFloat16+16 { // 65520 and above round to infinity
		return 0, false
	}
	if x == 0 {
		return float32(x), true
	}
	_, exp := math.Frexp(x) // x = frac * 2^exp, 0.5 <= |frac| < 1
	// The unit in the last place: 2^(exp-11) for normals, 2^-24 below.
	ulpExp := max(exp-11, -24)
	r := math.Ldexp(math.RoundToEven(math.Ldexp(x, -ulpExp)), ulpExp)
	if math.Abs(r) > maxFloat16 {
		return 0, false
	}
	return float32(r), true
}

// Round32 rounds a score to float32, the precision of the vectors it
// compares, and returns the float64 that the float32's shortest decimal
// form stands for: 0.9 rather than 0.8999999761581421.
func Round32(s float64) float64 {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], float64(float32(s)), 'g', -1, 32)
	r, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return s
	}
	return r
}
