package vector

// The graph's float32 distances with AVX2 and FMA, eight products at once,
// where the processor has them (dot_amd64.s); the portable loops otherwise.

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func l2sqAVX2(a, b *float32, n int) float32

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xgetbv0() uint32

// hasAVX2 reports whether the processor has AVX2 and FMA, and the
// operating system saves the AVX registers.
var hasAVX2 = func() bool {
	max, _, _, _ := cpuid(0, 0)
	if max < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c1&(fma|osxsave|avx) != fma|osxsave|avx || xgetbv0()&6 != 6 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	return b7&(1<<5) != 0
}()

// dot32 is the dot product of a and b (at least as long as a) in float32.
func dot32(a, b []float32) float32 {
	if hasAVX2 && len(a) > 0 {
		b = b[:len(a)]
		return dotAVX2(&a[0], &b[0], len(a))
	}
	return dot32Go(a, b)
}

// l2sq32 is the squared euclidean distance of a and b in float32.
func l2sq32(a, b []float32) float32 {
	if hasAVX2 && len(a) > 0 {
		b = b[:len(a)]
		return l2sqAVX2(&a[0], &b[0], len(a))
	}
	return l2sq32Go(a, b)
}
