//go:build !amd64

package vector

func dot32(a, b []float32) float32  { return dot32Go(a, b) }
func l2sq32(a, b []float32) float32 { return l2sq32Go(a, b) }
