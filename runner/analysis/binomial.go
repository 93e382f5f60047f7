package analysis

import (
	"math"
	"math/rand/v2"
)

// binomial draws from Binomial(n, p) by inversion, walking the support outward from the mode
// and taking the likelier neighbour first, so a draw costs about the distribution's standard
// deviation in steps, not its mean. Inversion is exact for any fixed order of the support;
// neighbours come from the ratio P(k+1)/P(k) = (n-k)/(k+1) * p/(1-p), and only the mode's
// probability needs logarithms. The simulated chance bands place k connections on n pods as
// n-1 binomial splits (simulatedBand), which is all this serves: the Go standard library has
// no binomial variate, and a numeric library for one function would double the packages a
// first build of bin/igwlab compiles for it.
func binomial(r *rand.Rand, n int, p float64) int {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	q := 1 - p
	mode := min(n, int(float64(n+1)*p))
	pm := binomialPMF(n, mode, p)
	u := r.Float64() - pm
	if u < 0 {
		return mode
	}
	lo, hi, plo, phi := mode, mode, pm, pm
	for lo > 0 || hi < n {
		down, up := -1.0, -1.0
		if lo > 0 {
			down = plo * float64(lo) / float64(n-lo+1) * q / p
		}
		if hi < n {
			up = phi * float64(n-hi) / float64(hi+1) * p / q
		}
		if up > down {
			hi, phi = hi+1, up
			if u -= up; u < 0 {
				return hi
			}
		} else {
			lo, plo = lo-1, down
			if u -= down; u < 0 {
				return lo
			}
		}
	}
	return mode // what rounding left of u after the whole support
}

// binomialPMF is P(X = k) for X ~ Binomial(n, p), 0 < p < 1, from log-factorials.
func binomialPMF(n, k int, p float64) float64 {
	lfact := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lfact(n) - lfact(k) - lfact(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log(1-p))
}
