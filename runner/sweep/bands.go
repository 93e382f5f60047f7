package sweep

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
)

// Band90 is one measure over a value's placements: its median and the band that holds 90% of
// them (the 5th to the 95th percentile).
type Band90 struct {
	P5     float64 `json:"p5"`
	Median float64 `json:"p50"`
	P95    float64 `json:"p95"`
}

// Bands are a value's measures over its runs, each run a placement of its own (on the
// simulated target --repeat is cheap, so a point is a distribution, not one run).
type Bands struct {
	Placements  int    `json:"placements"`
	CV          Band90 `json:"cv"`
	Connections Band90 `json:"connections"`
	// HotPod is the connections on the pod that got the most; IdlePods the pods that got none.
	HotPod     Band90 `json:"hot_pod_connections"`
	IdlePods   Band90 `json:"idle_pods"`
	HotWorker  Band90 `json:"hot_worker_busy"`
	P99Ms      Band90 `json:"p99_ms"`
	DrainsPerS Band90 `json:"drains_per_s"`
}

// bandsOf reads the bands off a value's finished runs (nil for fewer than two).
func bandsOf(runs []*analysis.Result) *Bands {
	if len(runs) < 2 {
		return nil
	}
	col := func(f func(*analysis.Result) float64) Band90 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return spreadOf90(v)
	}
	return &Bands{Placements: len(runs),
		CV:          col(func(r *analysis.Result) float64 { return r.CV }),
		Connections: col(func(r *analysis.Result) float64 { return r.ConnectionsTotal }),
		HotPod:      col(func(r *analysis.Result) float64 { return hotPod(r.Connections) }),
		IdlePods:    col(func(r *analysis.Result) float64 { return idlePods(r.Connections) }),
		HotWorker:   col(func(r *analysis.Result) float64 { return r.BusyMax }),
		P99Ms:       col(func(r *analysis.Result) float64 { return r.P99Ms }),
		DrainsPerS: col(func(r *analysis.Result) float64 {
			if r.WindowS <= 0 {
				return 0
			}
			return r.GoAways / r.WindowS
		}),
	}
}

// spreadOf90 is the median and the 5th and 95th percentiles, each a value some run measured
// (the nearest rank: no run's number is made up by interpolation).
func spreadOf90(v []float64) Band90 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Band90{P5: rank(0.05), Median: rank(0.5), P95: rank(0.95)}
}

func hotPod(conns map[string]float64) float64 {
	var m float64
	for _, c := range conns {
		m = max(m, c)
	}
	return m
}

func idlePods(conns map[string]float64) float64 {
	var n float64
	for _, c := range conns {
		if c == 0 {
			n++
		}
	}
	return n
}

// Text says the bands in words: the medians, and what holds in 90% of placements.
func (b *Bands) Text() string {
	pct := func(s Band90) string {
		return fmt.Sprintf("%.0f%% [%.0f%%, %.0f%%]", 100*s.Median, 100*s.P5, 100*s.P95)
	}
	idle := "every pod carries some"
	if b.IdlePods.P95 > 0 {
		idle = fmt.Sprintf("at most %.0f pods carry none", b.IdlePods.P95)
	}
	parts := []string{
		fmt.Sprintf("CV %.3f [%.3f, %.3f]", b.CV.Median, b.CV.P5, b.CV.P95),
		fmt.Sprintf("in 90%% of placements the hottest pod carries at most %.0f connections (median %.0f) and %s", b.HotPod.P95, b.HotPod.Median, idle),
	}
	if b.HotWorker.P95 > 0 {
		parts = append(parts, "hottest worker busy "+pct(b.HotWorker))
	}
	parts = append(parts, fmt.Sprintf("p99 %.1f ms [%.1f, %.1f]", b.P99Ms.Median, b.P99Ms.P5, b.P99Ms.P95),
		fmt.Sprintf("%.2f drains/s [%.2f, %.2f]", b.DrainsPerS.Median, b.DrainsPerS.P5, b.DrainsPerS.P95))
	return fmt.Sprintf("over %d placements, median [5th, 95th percentile]: %s", b.Placements, strings.Join(parts, "; "))
}

// writeBands writes each value's bands, where its runs make one.
func (sw *Sweep) writeBands(w io.Writer) {
	for _, p := range sw.Points {
		if p.Bands != nil {
			fmt.Fprintf(w, "%s: %s\n", p.Value, p.Bands.Text())
		}
	}
}
