// Package analysis turns per-pod numbers into the lab's measures (coefficient of variation
// across pods and across a pod's workers, busy ratios, GOAWAY counts) and verdicts, and judges
// every spread against what chance alone would give for the same number of connections.
package analysis

import (
	"math"
	"sort"
)

// CV is the population coefficient of variation, stddev/mean with divisor n. It is 0 for no
// values or a zero sum. A negative variance from rounding is clamped to 0.
func CV(xs []float64) float64 {
	n := float64(len(xs))
	if n == 0 {
		return 0
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sum == 0 {
		return 0
	}
	mean := sum / n
	v := sq/n - mean*mean
	if v < 0 {
		v = 0
	}
	return math.Sqrt(v) / mean
}

// Median returns the median of xs (NaN for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MinMax returns the smallest and largest of xs.
func MinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
