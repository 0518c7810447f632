//go:build !amd64

package vector

// hasAVX2 is false: the portable loops serve.
const hasAVX2 = false

func dot32(a, b []float32) float32  { return dot32Go(a, b) }
func l2sq32(a, b []float32) float32 { return l2sq32Go(a, b) }
