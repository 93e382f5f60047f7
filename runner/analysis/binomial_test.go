package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBinomialMatchesItsDistribution draws from binomial and compares the frequencies with
// the exact probabilities (the sampler computes only the mode's, and walks to the others by
// their ratios): the total variation distance and the mean and variance, for splits
// the chance bands make (a few connections over a few pods, thousands over tens).
func TestBinomialMatchesItsDistribution(t *testing.T) {
	const draws = 200000
	for _, tc := range []struct {
		n int
		p float64
	}{{1, 0.5}, {7, 1.0 / 6}, {100, 1.0 / 6}, {100, 0.5}, {2000, 1.0 / 40}, {10000, 1.0 / 3}} {
		r := rand.New(rand.NewPCG(uint64(tc.n), 7))
		freq := make([]float64, tc.n+1)
		var sum, sum2 float64
		for range draws {
			c := binomial(r, tc.n, tc.p)
			if c < 0 || c > tc.n {
				t.Fatalf("Binomial(%d, %.3f) drew %d", tc.n, tc.p, c)
			}
			freq[c]++
			sum += float64(c)
			sum2 += float64(c) * float64(c)
		}
		var tv float64
		for k := range freq {
			tv += math.Abs(freq[k]/draws - binomialPMF(tc.n, k, tc.p))
		}
		tv /= 2
		mean, want := sum/draws, float64(tc.n)*tc.p
		vr, wantVar := sum2/draws-mean*mean, want*(1-tc.p)
		// Sampling noise of 200,000 draws: the distance grows with the support's spread
		// (about sqrt(support/draws)); mean and variance within a few standard errors.
		maxTV := 0.01 + 0.5*math.Sqrt(6*math.Sqrt(wantVar)/draws)
		if tv > maxTV || math.Abs(mean-want) > 5*math.Sqrt(wantVar/draws) || math.Abs(vr-wantVar) > 0.03*wantVar {
			t.Errorf("Binomial(%d, %.4f): distance %.4f (max %.4f), mean %.3f (want %.3f), variance %.3f (want %.3f)",
				tc.n, tc.p, tv, maxTV, mean, want, vr, wantVar)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	if binomial(r, 0, 0.5) != 0 || binomial(r, 5, 0) != 0 || binomial(r, 5, 1) != 5 {
		t.Error("binomial's edges: n=0, p=0 and p=1 draw 0, 0 and n")
	}
}
