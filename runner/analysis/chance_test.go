package analysis

import (
	"math"
	"testing"
)

func TestCV(t *testing.T) {
	cases := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0, 0, 0}, 0},
		{[]float64{5, 5, 5, 5}, 0},
		{[]float64{1, 0, 0, 0, 0, 0}, math.Sqrt(5)}, // all on one of six pods
		{[]float64{1, 1, 0, 0, 0, 0}, math.Sqrt(2)}, // two hot pods
		{[]float64{3, 1}, 0.5},
	}
	for _, c := range cases {
		if got := CV(c.xs); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("CV(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestChanceExactSmallK(t *testing.T) {
	// k=1: always one pod. k=2 over 6 pods: same pod with p=1/6 (CV sqrt5), else sqrt2.
	b1 := Chance(1, 6)
	if math.Abs(b1.Median-math.Sqrt(5)) > 1e-9 || math.Abs(b1.Lo-math.Sqrt(5)) > 1e-9 {
		t.Fatalf("k=1 band %+v", b1)
	}
	b2 := Chance(2, 6)
	if p := b2.PAtLeast(math.Sqrt(5)); math.Abs(p-1.0/6) > 1e-9 {
		t.Fatalf("P(CV=sqrt5 | k=2) = %v, want 1/6", p)
	}
	if v, _ := b2.Judge(math.Sqrt(2)); v != WithinChance {
		t.Fatalf("k=2 at sqrt2 judged %s", v)
	}
	if v, _ := b2.Judge(math.Sqrt(5)); v != WithinChance {
		t.Fatalf("k=2 at sqrt5 judged %s (p=1/6 is not a tail)", v)
	}
}

func TestChanceMeanSquareMatchesTheory(t *testing.T) {
	// E[CV^2] = (n-1)/k exactly for the multinomial; check both the exact and simulated paths.
	for _, k := range []int{6, 24, 40, 100, 600} {
		b := Chance(k, 6)
		var m2 float64
		for i, cv := range b.cvs {
			m2 += cv * cv * b.probs[i]
		}
		want := 5 / float64(k)
		tol := 1e-9
		if !b.Exact {
			tol = 0.03 * want
		}
		if math.Abs(m2-want) > tol {
			t.Errorf("k=%d: E[CV^2]=%v, want %v (exact=%v)", k, m2, want, b.Exact)
		}
	}
}

func TestJudgeTails(t *testing.T) {
	b := Chance(100, 6)
	if v, _ := b.Judge(1.5); v != MoreConcentrated {
		t.Errorf("CV 1.5 with k=100 judged %s", v)
	}
	if v, _ := b.Judge(0.0); v != MoreEven {
		t.Errorf("CV 0 with k=100 judged %s", v)
	}
	if v, _ := b.Judge(b.Median); v != WithinChance {
		t.Errorf("median judged %s", v)
	}
}

func TestChanceDeterministic(t *testing.T) {
	a := simulatedBand(300, 6)
	b := simulatedBand(300, 6)
	if a.quantile(0.975) != b.quantile(0.975) {
		t.Fatal("simulation not deterministic")
	}
}
