// Package vectortest makes vectors for the tests and benchmarks of vector
// search: random ones, clustered ones, and ones that vary along few
// directions, as embeddings do.
package vectortest

import "math/rand/v2"

// Random returns n vectors of dims standard normal values: no structure at
// all, the hardest case for an approximate search.
func Random(rng *rand.Rand, n, dims int) [][]float32 {
	vs := make([][]float32, n)
	for i := range vs {
		v := make([]float32, dims)
		for d := range v {
			v[d] = float32(rng.NormFloat64())
		}
		vs[i] = v
	}
	return vs
}

// Clustered returns n vectors of dims values scattered (standard deviation
// 0.4 in every dimension) around 100 standard normal centres.
func Clustered(rng *rand.Rand, n, dims int) [][]float32 {
	centres := Random(rng, 100, dims)
	vs := Random(rng, n, dims)
	for _, v := range vs {
		c := centres[rng.IntN(len(centres))]
		for d := range v {
			v[d] = c[d] + 0.4*v[d]
		}
	}
	return vs
}

// Latent returns n vectors of dims values that vary along few directions,
// as embeddings of texts do: a random linear map of points of 24
// dimensions scattered around 50 centres, plus a little noise (standard
// deviation 0.5, against about 10 along the map) in every dimension.
// Consecutive calls with the same rng and dims map with different maps:
// make the data and its queries in one call.
func Latent(rng *rand.Rand, n, dims int) [][]float32 {
	const r = 24
	a := make([]float32, dims*r)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	centres := make([][r]float64, 50)
	for i := range centres {
		for j := range r {
			centres[i][j] = 2 * rng.NormFloat64()
		}
	}
	vs := make([][]float32, n)
	for i := range vs {
		var z [r]float64
		c := centres[rng.IntN(len(centres))]
		for j := range z {
			z[j] = c[j] + rng.NormFloat64()
		}
		v := make([]float32, dims)
		for d := range v {
			var x float64
			for j, zj := range z {
				x += float64(a[d*r+j]) * zj
			}
			v[d] = float32(x + 0.5*rng.NormFloat64())
		}
		vs[i] = v
	}
	return vs
}
