package analysis

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkCV(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 6)
	for i := range xs {
		xs[i] = float64(r.IntN(100))
	}
	for b.Loop() {
		_ = CV(xs)
	}
}

// The chance bands are cached per (k, n) in a run; these time the first computation.
func BenchmarkChanceExact(b *testing.B) {
	for b.Loop() {
		band := exactBand(exactMaxK, 6)
		_ = band.quantile(0.975)
	}
}

func BenchmarkChanceSimulated(b *testing.B) {
	for b.Loop() {
		band := simulatedBand(100, 6)
		_ = band.quantile(0.975)
	}
}
