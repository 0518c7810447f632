package vector

import "math"

// Fast reports whether a Bounds computes its float32 approximations with
// the processor's vector instructions (AVX2 and FMA): several times faster
// than the exact float64 sums. Without them it costs about what the exact
// score does.
func Fast() bool { return hasAVX2 }

// Bounds brackets the exact scores of vectors against one query (Metric.Score,
// and for cosine CosineOf(Dot(v, q), SumSquares(v), SumSquares(q)): the
// float64 values summed in order) from their float32 approximations (the
// dot product or squared distance in float32, in any order: AVX2 where
// the processor has it), with a bound on the error that holds for every
// input.
//
// The derivation (Higham, Accuracy and Stability of Numerical Algorithms,
// §3.1 and §2.2 for underflow). Let n be the length, u = 2^-24 the unit
// roundoff of float32 and γ(k) = k·u/(1−k·u).
//
//   - The float32 dot product, summed in any order (a tree of depth at
//     most n, with or without fused multiply-adds): each product reaches
//     the result through at most n roundings, each fl(z) = z(1+δ) + ε with
//     |δ| ≤ u and |ε| ≤ 2^-150 (half the least subnormal: an underflowing
//     product or FMA; an addition whose result is subnormal is exact). So
//     |dot32 − a·b| ≤ γ(n)·Σ|a_i b_i| + n·2^-150·(1+γ(n)). An overflow
//     makes the result infinite or NaN (an infinity never becomes finite
//     again in a sum), so a finite result had none; Range refuses the
//     others.
//   - The exact (float64, in order) dot product: a product of two float32
//     is exact in float64 (48 significant bits, exponents within range);
//     the n−1 sums round, with no underflow (every partial sum is a
//     multiple of 2^-298 or zero), so |Dot − a·b| ≤ γ64(n)·Σ|a_i b_i|,
//     γ64 of u = 2^-53: about 2^-29 of γ(n).
//   - Σ|a_i b_i| ≤ ‖a‖‖b‖ (Cauchy–Schwarz), and ‖a‖² ≤ SumSquares(a)/(1−γ64(n))
//     (sums of terms ≥ 0). N = √SumSquares(v)·√SumSquares(q) in float64.
//
// Hence |dot32 − Dot| ≤ (γ(n) + γ64(n))(1+2^-40)·N + n·2^-149. Range uses
// E = 2γ(n+2)·N + n·2^-148: the extra γ(n)·N and n·2^-149 are far more
// than the float64 roundings of computing E and dot32 ± E (each at most
// 2^-52 of |dot32| + E ≤ 2N + n·2^-148). For cosine the score is
// Dot/N rounded, computed with the same N, so it lies within
// E/N = 2γ(n+2) + n·2^-148/N of dot32/N, and the two roundings of the
// quotients (2^-52 of values at most 1 + E/N) again fall in the slack.
//
// Euclidean: every term (a_i−b_i)² is ≥ 0, so the relative bound applies
// to the value itself. In float32 the subtraction rounds once (exact when
// subnormal), the square and the sum at most n+1 times: l2sq32 =
// T(1+θ) + e, |θ| ≤ γ(n+2), |e| ≤ n·2^-149, where T = Σ(a_i−b_i)². In
// float64 the subtraction, the square and the n−1 sums round:
// Σ = T(1+θ64), |θ64| ≤ γ64(n+2), then √ rounds once. So T lies in
// [(l2sq32 − n·2^-149)/(1+γ(n+2)), (l2sq32 + n·2^-149)/(1−γ(n+2))], and
// the score within √ of [(l2sq32 − n·2^-148)(1 − 2γ(n+2)),
// (l2sq32 + n·2^-148)(1 + 2γ(n+2))]: doubling γ covers 1/(1±γ), θ64 and
// the roundings of √ and of these products.
//
// For 768 values 2γ(n+2) is about 9.2e-5: a cosine is known to ±0.0001.
type Bounds struct {
	m     Metric
	q     []float32
	qnorm float64 // √SumSquares(q)
	rel   float64 // 2γ(n+2)
	abs   float64 // n·2^-148
	ok    bool

	dot, l2sq func(a, b []float32) float32 // float32, any order: dot32 and l2sq32 but in tests
}

// NewBounds returns the Bounds of m's scores of vectors against q.
func NewBounds(m Metric, q []float32) *Bounds {
	n := float64(len(q))
	nu := (n + 2) * 0x1p-24
	return &Bounds{m: m, q: q, qnorm: math.Sqrt(SumSquares(q)),
		rel: 2 * nu / (1 - nu), abs: n * 0x1p-148,
		ok: len(q) > 0 && nu < 0.25, dot: dot32, l2sq: l2sq32}
}

// Range returns lo and hi with lo ≤ s ≤ hi, where s is m's exact score of
// v against the query (sumSquares: SumSquares(v)). ok is false when it
// cannot bound it: float32 overflowed, v is not as long as the query, or
// (cosine) one of the two is zero.
func (b *Bounds) Range(v []float32, sumSquares float64) (lo, hi float64, ok bool) {
	if !b.ok || len(v) != len(b.q) {
		return 0, 0, false
	}
	switch b.m {
	case Euclidean:
		d := float64(b.l2sq(v, b.q))
		if math.IsInf(d, 0) || math.IsNaN(d) {
			return 0, 0, false
		}
		return math.Sqrt(max(0, d-b.abs) * (1 - b.rel)), math.Sqrt((d + b.abs) * (1 + b.rel)), true
	}
	d := float64(b.dot(v, b.q))
	if math.IsInf(d, 0) || math.IsNaN(d) {
		return 0, 0, false
	}
	n := math.Sqrt(sumSquares) * b.qnorm
	if b.m == DotProduct {
		e := b.rel*n + b.abs
		return d - e, d + e, true
	}
	if n == 0 {
		return 0, 0, false
	}
	c, e := d/n, b.rel+b.abs/n
	return c - e, c + e, true
}
