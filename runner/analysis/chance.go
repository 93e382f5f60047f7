package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// Band is the distribution of the CV across n pods when k connections are placed on pods
// independently and uniformly at random (what a kube-proxy-style L4 balancer does): per-pod
// counts are multinomial and the CV's expected square is (n-1)/k. A measured CV is judged
// against this band for the k actually observed.
type Band struct {
	K      int     `json:"k"`
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"p2_5"`
	Median float64 `json:"p50"`
	Hi     float64 `json:"p97_5"`
	// Approx is sqrt((n-1)/k), the root of the expected square.
	Approx float64 `json:"sqrt_n_minus_1_over_k"`
	Exact  bool    `json:"exact"`

	cvs   []float64 // support, ascending
	probs []float64 // probability of each support value
}

const (
	exactMaxK  = 40    // enumerate exactly up to this many connections
	simDraws   = 20000 // otherwise simulate this many placements
	tailCutoff = 0.025 // a CV beyond the 2.5% tails is called more or less concentrated than chance
)

var bandCache sync.Map // [2]int -> *Band

// Chance returns the chance band of the CV for k connections over n pods.
func Chance(k, n int) *Band {
	key := [2]int{k, n}
	if b, ok := bandCache.Load(key); ok {
		return b.(*Band)
	}
	var b *Band
	switch {
	case k <= 0 || n <= 1:
		b = &Band{K: k, N: n, cvs: []float64{0}, probs: []float64{1}, Exact: true}
	case k <= exactMaxK:
		b = exactBand(k, n)
	default:
		b = simulatedBand(k, n)
	}
	if k > 0 && n > 1 {
		b.Approx = math.Sqrt(float64(n-1) / float64(k))
	}
	b.Mean, b.Lo, b.Median, b.Hi = b.expect(), b.quantile(0.025), b.quantile(0.5), b.quantile(0.975)
	bandCache.Store(key, b)
	return b
}

// exactBand enumerates the multinomial distribution of the sum of squared counts, which fixes
// the CV: CV^2 = n*sum(x^2)/k^2 - 1.
func exactBand(k, n int) *Band {
	fact := make([]float64, k+1)
	fact[0] = 1
	for i := 1; i <= k; i++ {
		fact[i] = fact[i-1] * float64(i)
	}
	// f[used][sumsq] = sum over pods so far of prod 1/c!
	type state map[int]float64
	f := make([]state, k+1)
	f[0] = state{0: 1}
	for pod := 0; pod < n; pod++ {
		g := make([]state, k+1)
		for used := 0; used <= k; used++ {
			for ss, w := range f[used] {
				for c := 0; used+c <= k; c++ {
					if pod == n-1 && used+c != k {
						continue
					}
					if g[used+c] == nil {
						g[used+c] = state{}
					}
					g[used+c][ss+c*c] += w / fact[c]
				}
			}
		}
		f = g
	}
	scale := fact[k] * math.Pow(float64(n), -float64(k))
	byCV := map[float64]float64{}
	for ss, w := range f[k] {
		cv2 := float64(n)*float64(ss)/float64(k*k) - 1
		cv := math.Sqrt(math.Max(0, cv2))
		byCV[math.Round(cv*1e9)/1e9] += w * scale
	}
	b := &Band{K: k, N: n, Exact: true}
	for cv := range byCV {
		b.cvs = append(b.cvs, cv)
	}
	sort.Float64s(b.cvs)
	for _, cv := range b.cvs {
		b.probs = append(b.probs, byCV[cv])
	}
	return b
}

// simulatedBand draws placements; the seed depends only on (k, n) so the band is the same on
// every run and every machine.
func simulatedBand(k, n int) *Band {
	r := rand.New(rand.NewPCG(uint64(k)*1000003, uint64(n)))
	counts := make([]float64, n)
	cvs := make([]float64, simDraws)
	for d := range cvs {
		left := k
		for i := 0; i < n-1; i++ {
			c := binomial(r, left, 1/float64(n-i))
			counts[i] = float64(c)
			left -= c
		}
		counts[n-1] = float64(left)
		cvs[d] = CV(counts)
	}
	sort.Float64s(cvs)
	b := &Band{K: k, N: n}
	p := 1 / float64(simDraws)
	for _, cv := range cvs {
		b.cvs = append(b.cvs, cv)
		b.probs = append(b.probs, p)
	}
	return b
}

func (b *Band) expect() float64 {
	var m float64
	for i, cv := range b.cvs {
		m += cv * b.probs[i]
	}
	return m
}

// quantile returns the smallest CV whose cumulative probability reaches q.
func (b *Band) quantile(q float64) float64 {
	var c float64
	for i, cv := range b.cvs {
		c += b.probs[i]
		if c >= q-1e-12 {
			return cv
		}
	}
	return b.cvs[len(b.cvs)-1]
}

// PAtLeast is the chance probability of a CV at least cv.
func (b *Band) PAtLeast(cv float64) float64 {
	var p float64
	for i, x := range b.cvs {
		if x >= cv-1e-9 {
			p += b.probs[i]
		}
	}
	return math.Min(1, p)
}

// PAtMost is the chance probability of a CV at most cv.
func (b *Band) PAtMost(cv float64) float64 {
	var p float64
	for i, x := range b.cvs {
		if x <= cv+1e-9 {
			p += b.probs[i]
		}
	}
	return math.Min(1, p)
}

// Judgement words.
const (
	MoreConcentrated = "more concentrated than chance"
	WithinChance     = "within chance"
	MoreEven         = "more even than chance"
)

// Judge places cv against the band: beyond a 2.5% tail it is more concentrated (or more even)
// than random placement of the same k connections would make it.
func (b *Band) Judge(cv float64) (string, float64) {
	hi, lo := b.PAtLeast(cv), b.PAtMost(cv)
	switch {
	case hi < tailCutoff:
		return MoreConcentrated, hi
	case lo < tailCutoff:
		return MoreEven, lo
	default:
		return WithinChance, math.Min(hi, lo)
	}
}

// String summarises the band of connections over pods.
func (b *Band) String() string { return b.Over("pods") }

// Over summarises the band of connections over what they are placed on (pods, workers).
func (b *Band) Over(what string) string {
	return fmt.Sprintf("chance for k=%d over %d %s: median %.3f, 95%% band [%.3f, %.3f]", b.K, b.N, what, b.Median, b.Lo, b.Hi)
}
