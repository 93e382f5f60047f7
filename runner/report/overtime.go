package report

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/igwlab/igwlab/runner/analysis"
)

// headline are the event steps the over-time plot marks: what the scenario did, not each
// pod's readiness (those are in events.json).
var headline = map[string]bool{"scale": true, "rollout": true, "rollout-done": true, "push": true, "kill": true}

// overTimePlots draws, for each scenario with events, every pod's share of the pool's
// requests over the window with the events marked: where the work went when the pool changed.
func overTimePlots(r *Run) ([]Plot, error) {
	var out []Plot
	for _, res := range r.ok() {
		if res.OverTime == nil || len(res.OverTime.Events) == 0 {
			continue
		}
		p, err := sharePlot(res, r.Series[res.Name])
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

func sharePlot(res *analysis.Result, s *Series) (*Plot, error) {
	if s == nil || len(s.Elapsed) < 2 {
		return nil, nil
	}
	total := make([]float64, len(s.Elapsed))
	for _, pod := range s.Pods {
		for i, v := range s.Column("rps:" + pod) {
			if i < len(total) && !math.IsNaN(v) {
				total[i] += v
			}
		}
	}
	isNew := map[string]bool{}
	for _, n := range res.OverTime.NewPods {
		isNew[n] = true
	}
	ys := map[string][]float64{}
	for i, pod := range s.Pods {
		share := make([]float64, len(s.Elapsed))
		for j, v := range s.Column("rps:" + pod) {
			if j >= len(share) {
				break
			}
			share[j] = v / total[j]
			if total[j] == 0 || math.IsNaN(v) {
				share[j] = math.NaN()
			}
		}
		label := fmt.Sprintf("pod #%d", i+1)
		if isNew[pod] {
			label += " (new)"
		}
		ys[label] = share
	}
	p, err := lines(res.Name+": each pod's share of requests", "share of requests", s.Elapsed, ys)
	if err != nil {
		return nil, err
	}
	p.Y.Max = 1
	var marked []string
	for _, m := range res.OverTime.Events {
		if !headline[m.Kind] {
			continue
		}
		x := m.At.Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: 1}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width, l.Dashes = grey, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		marked = append(marked, fmt.Sprintf("%s at %.1f s", m.Kind, x))
	}
	png, err := render(p, 8*vg.Inch, 4*vg.Inch)
	return &Plot{Name: "over_time_" + res.Name + ".png", Title: res.Name + ": the pool over time",
		Caption: "Each pod's share of the pool's requests; dashed lines mark " + strings.Join(marked, ", ") +
			" (every step is in events.json). A pod's line starts when it is first read and ends when it is gone.", PNG: png}, err
}
