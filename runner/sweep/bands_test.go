package sweep

import (
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
)

// TestBands reads a value's placements: nearest-rank percentiles (a number some run measured),
// the hottest pod and the pods left idle, and says them in words.
func TestBands(t *testing.T) {
	var runs []*analysis.Result
	for i := 1; i <= 20; i++ {
		r := &analysis.Result{WindowS: 10, GoAways: float64(10 * i), P99Ms: float64(i)}
		r.CV, r.BusyMax, r.ConnectionsTotal = float64(i)/100, float64(i)/20, 6
		r.Connections = map[string]float64{"a": float64(i % 3), "b": 0, "c": 6 - float64(i%3)}
		runs = append(runs, r)
	}
	if bandsOf(runs[:1]) != nil {
		t.Error("one run makes no band")
	}
	b := bandsOf(runs)
	want := Band90{P5: 0.01, Median: 0.10, P95: 0.19}
	if b.Placements != 20 || b.CV != want {
		t.Errorf("CV band %+v over %d, want %+v over 20", b.CV, b.Placements, want)
	}
	if b.HotPod.P95 != 6 || b.IdlePods.P5 != 1 || b.IdlePods.P95 != 2 || b.DrainsPerS.Median != 10 {
		t.Errorf("hottest pod %+v, idle pods %+v, drains/s %+v", b.HotPod, b.IdlePods, b.DrainsPerS)
	}
	text := b.Text()
	for _, w := range []string{"over 20 placements", "CV 0.100 [0.010, 0.190]", "hottest pod carries at most 6 connections", "at most 2 pods carry none", "hottest worker busy 50% [5%, 95%]"} {
		if !strings.Contains(text, w) {
			t.Errorf("%q lacks %q", text, w)
		}
	}
}
