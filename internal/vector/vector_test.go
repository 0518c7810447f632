package vector

import (
	"math"
	"testing"
)

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		m    Metric
		a, b []float32
		want float64
		ok   bool
	}{
		{Cosine, []float32{1, 0}, []float32{1, 0}, 1, true},
		{Cosine, []float32{1, 0}, []float32{0, 1}, 0, true},
		{Cosine, []float32{1, 2}, []float32{-1, -2}, -1, true},
		{Cosine, []float32{1, 2, 3}, []float32{2, 4, 6}, 1, true},
		{Cosine, []float32{0, 0}, []float32{1, 0}, 0, false},
		{Cosine, []float32{1}, []float32{1, 0}, 0, false},
		{Cosine, nil, nil, 0, false},
		{DotProduct, []float32{1, 2, 3}, []float32{4, 5, 6}, 32, true},
		{DotProduct, []float32{0, 0}, []float32{0, 0}, 0, true},
		{DotProduct, []float32{1}, []float32{1, 2}, 0, false},
		{Euclidean, []float32{0, 0}, []float32{3, 4}, 5, true},
		{Euclidean, []float32{1, 1}, []float32{1, 1}, 0, true},
		{Euclidean, []float32{1, 1}, []float32{1}, 0, false},
	} {
		got, ok := tc.m.Score(tc.a, tc.b)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s(%v, %v) = %v, %v; want %v, %v", tc.m, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		s  string
		m  Metric
		ok bool
	}{{"cosine", Cosine, true}, {"DotProduct", DotProduct, true}, {"EUCLIDEAN", Euclidean, true}, {"manhattan", Cosine, false}, {"", Cosine, false}} {
		if m, ok := ParseMetric(tc.s); m != tc.m || ok != tc.ok {
			t.Errorf("ParseMetric(%q) = %v, %v", tc.s, m, ok)
		}
	}
	for _, tc := range []struct {
		s  string
		t  Type
		ok bool
	}{{"float32", Float32, true}, {"Float16", Float16, true}, {"INT8", Int8, true}, {"uint8", Uint8, true}, {"float64", Float32, false}} {
		if ty, ok := ParseType(tc.s); ty != tc.t || ok != tc.ok {
			t.Errorf("ParseType(%q) = %v, %v", tc.s, ty, ok)
		}
	}
	if !Cosine.HigherIsCloser() || !DotProduct.HigherIsCloser() || Euclidean.HigherIsCloser() {
		t.Error("HigherIsCloser: cosine and dotproduct are similarities, euclidean a distance")
	}
}

func TestElement(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		x    float64
		want float32
		ok   bool
	}{
		{Float32, 0.1, float32(0.1), true},
		{Float32, 1e39, 0, false},
		{Float32, -1e39, 0, false},
		{Float16, 1, 1, true},
		{Float16, 0.1, 0.099975586, true}, // 0x2e66
		{Float16, 1.0 / 3, 0.33325195, true},
		{Float16, 2049, 2048, true}, // ties to even
		{Float16, 2051, 2052, true},
		{Float16, 65504, 65504, true},
		{Float16, 65519, 65504, true},
		{Float16, 65520, 0, false},
		{Float16, -70000, 0, false},
		{Float16, 1e-8, 0, true},             // below half the smallest subnormal
		{Float16, 6e-8, 5.9604645e-08, true}, // the smallest subnormal, 2^-24
		{Float16, -0.5, -0.5, true},
		{Int8, 127, 127, true},
		{Int8, -128, -128, true},
		{Int8, 128, 0, false},
		{Int8, 1.5, 0, false},
		{Uint8, 255, 255, true},
		{Uint8, -1, 0, false},
		{Uint8, 256, 0, false},
		{Uint8, 0.5, 0, false},
	} {
		got, ok := tc.t.Element(tc.x)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s.Element(%v) = %v, %v; want %v, %v", tc.t, tc.x, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRound32(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{float64(float32(0.9)), 0.9},
		{0.9938837341719244, 0.9938837},
		{1, 1},
		{0, 0},
		{-2.5, -2.5},
		{1e-30, 1e-30},
	} {
		if got := Round32(tc.in); got != tc.want {
			t.Errorf("Round32(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
