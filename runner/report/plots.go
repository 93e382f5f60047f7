// Package report draws a run's plots (PNG, with gonum/plot) and writes its self-contained HTML
// report, from the raw results alone, so both can be made again from any saved results folder.
package report

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// Run is what the plots and the report are made from.
type Run struct {
	Target      string
	Pods        int
	Concurrency int
	// InForce names the Envoy defaults and round-trip times the run had ("" where the run
	// did not record them).
	InForce    string
	Order      []string
	Scenarios  map[string]*analysis.Result
	Hypotheses map[string]analysis.Verdict
	Evaluation []analysis.Verdict
	// Series holds each scenario's timeseries.csv.
	Series map[string]*Series
	// Teaches says what each scenario shows (from its scenario.yaml).
	Teaches map[string]string
	// Why holds the reason for each scenario's local departures, if any.
	Why map[string]string
	// Feeds says which scenario feeds each call in each role: the plots draw scenarios by the
	// role they play in a call (the catalog's feeds), not by name.
	Feeds stacks.Feeds
}

// role is a scenario a plot draws, named by a call it feeds and its role there.
type role struct{ call, role string }

// The scenarios of the plots that draw chosen scenarios, by their roles.
var (
	// perPodRoles: where the connections of the stream-cap and count-rotation calls landed.
	perPodRoles = []role{{"H-B h2dial", "control"}, {"H-B h2dial", "capped"}, {"H-C h2dial", "rotated"},
		{"H-B fortio", "control"}, {"H-B fortio", "capped"}, {"H-C fortio", "rotated"}}
	// rotationRoles: the runs whose connections rotate, each over time.
	rotationRoles = []role{{"H-C h2dial", "rotated"}, {"H-C fortio", "rotated"}, {"S10", "rotation"}}
	leadRole      = role{"H-A", "trigger"}
	filterRoles   = [2]role{{"S11", "control"}, {"S11", "filters"}}
	balancedRole  = role{"H-E", "balanced"}
)

// fed is the scenario that plays r, or "" when the catalog has none.
func (run *Run) fed(r role) string { return run.Feeds.Scenario(r.call, r.role) }

// Plot is one rendered PNG.
type Plot struct {
	Name    string // file name
	Title   string
	Caption string
	PNG     []byte
}

var (
	blue      = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	lightBlue = color.RGBA{R: 158, G: 202, B: 225, A: 255}
	orange    = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	grey      = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	palette   = []color.Color{blue, orange, color.RGBA{G: 160, B: 60, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
		color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
		color.RGBA{R: 227, G: 119, B: 194, A: 255}, grey}
)

// ok returns the scenarios that ran, in run order.
func (r *Run) ok() []*analysis.Result {
	var out []*analysis.Result
	for _, n := range r.Order {
		if s := r.Scenarios[n]; s.OK() {
			out = append(out, s)
		}
	}
	return out
}

// Plots draws every plot the run has data for.
func Plots(r *Run) ([]Plot, error) {
	var out []Plot
	for _, f := range []func(*Run) (*Plot, error){cvPlot, perPodPlot, goawayPlot, p99Plot, workerCVPlot, pausePlot,
		leadPlot, filterPlot} {
		p, err := f(r)
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	ot, err := overTimePlots(r)
	if err != nil {
		return nil, err
	}
	out = append(out, ot...)
	for _, role := range rotationRoles {
		p, err := rotationPlot(r, r.fed(role))
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// shades are the colours of the catalog's client shades (stacks.ClientKind.Shade).
var shades = map[string]color.Color{"dark": blue, "light": lightBlue, "orange": orange}

func clientColor(s *analysis.Result) color.Color {
	if k, ok := stacks.LookupClient(s.Client); ok && shades[k.Shade] != nil {
		return shades[k.Shade]
	}
	return blue
}

// timedFromSend says whether the scenario's client times requests from when it sends them.
func timedFromSend(s *analysis.Result) bool {
	k, _ := stacks.LookupClient(s.Client)
	return k.TimedFromSend
}

func cvPlot(r *Run) (*Plot, error) {
	rs := r.ok()
	if len(rs) == 0 {
		return nil, nil
	}
	p, err := hbars("CV of connections across pods, against chance", "CV of downstream_cx_http2_total (bars); chance band for the same k (lines)", rs,
		func(s *analysis.Result) float64 { return s.CV }, clientColor)
	if err != nil {
		return nil, err
	}
	var pts plotter.XYs
	var errs plotter.XErrors
	for i, s := range rs {
		if s.Chance == nil {
			continue
		}
		pts = append(pts, plotter.XY{X: s.Chance.Median, Y: float64(len(rs) - 1 - i)})
		errs = append(errs, struct{ Low, High float64 }{s.Chance.Median - s.Chance.Lo, s.Chance.Hi - s.Chance.Median})
	}
	if len(pts) > 0 {
		eb, err := plotter.NewXErrorBars(struct {
			plotter.XYer
			plotter.XErrorer
		}{pts, errs})
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Color, eb.LineStyle.Width = grey, vg.Points(1.5)
		p.Add(eb)
	}
	// The lab's threshold for "rotation spread the load" (H-C): CV at or under 0.5.
	ref, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: -0.5}, {X: 0.5, Y: float64(len(rs)) - 0.5}})
	if err != nil {
		return nil, err
	}
	ref.LineStyle.Color, ref.LineStyle.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ref)
	p.X.Min = 0
	png, err := render(p, 8*vg.Inch, vg.Length(1.2+0.32*float64(len(rs)))*vg.Inch)
	return &Plot{Name: "cv_across_scenarios.png", Title: "CV across scenarios",
		Caption: "Bars: each scenario's CV of new connections across pods (dark: h2dial, light: fortio, orange: gRPC). Grey lines: where chance alone puts the CV for that many connections; a bar beyond its line is more concentrated than random placement explains. Dashed: CV 0.5, the lab's mark for a well spread pool.",
		PNG:     png}, err
}

func perPodPlot(r *Run) (*Plot, error) {
	var rs []*analysis.Result
	seen := map[string]bool{}
	for _, role := range perPodRoles {
		n := r.fed(role)
		if s := r.Scenarios[n]; s.OK() && !seen[n] {
			rs = append(rs, s)
		}
		seen[n] = true
	}
	if len(rs) == 0 {
		return nil, nil
	}
	p := newPlot("Connections per pod (busiest pod first)", "", "connections opened in the window")
	w := vg.Points(9)
	for i, s := range rs {
		counts := make([]float64, 0, len(s.Connections))
		for _, v := range s.Connections {
			counts = append(counts, v)
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(counts)))
		bc, err := plotter.NewBarChart(plotter.Values(counts), w)
		if err != nil {
			return nil, err
		}
		bc.Color, bc.LineStyle.Width = palette[i%len(palette)], 0
		bc.Offset = w * vg.Length(float64(i)-float64(len(rs)-1)/2)
		p.Add(bc)
		p.Legend.Add(s.Name, bc)
	}
	labels := make([]string, r.Pods)
	for i := range labels {
		labels[i] = fmt.Sprintf("pod #%d", i+1)
	}
	p.NominalX(labels...)
	png, err := render(p, 8*vg.Inch, 4*vg.Inch)
	return &Plot{Name: "per_pod_connections.png", Title: "Connections per pod",
		Caption: "Where the connections landed. Without rotation a dialing client's one connection, or fortio's two, sit on one or two pods; a stream cap makes only the dialing client open more; count rotation spreads both.",
		PNG:     png}, err
}

func goawayPlot(r *Run) (*Plot, error) {
	var rs []*analysis.Result
	for _, s := range r.ok() {
		if s.GoAways > 0 || s.MaxRequestsReached > 0 || s.MaxDurationReached > 0 {
			rs = append(rs, s)
		}
	}
	if len(rs) == 0 {
		return nil, nil
	}
	// Drains and Envoy's request counter differ by orders of magnitude: one panel each.
	top, err := groupedBars("GOAWAY rotations: connections drained", "in the window", rs,
		[]string{"connections drained", "max_duration_reached"},
		[]func(*analysis.Result) float64{
			func(s *analysis.Result) float64 { return s.GoAways },
			func(s *analysis.Result) float64 { return s.MaxDurationReached },
		})
	if err != nil {
		return nil, err
	}
	bottom, err := groupedBars("downstream_cx_max_requests_reached: requests at or over the limit", "in the window", rs,
		[]string{"max_requests_reached"},
		[]func(*analysis.Result) float64{func(s *analysis.Result) float64 { return s.MaxRequestsReached }})
	if err != nil {
		return nil, err
	}
	png, err := stack(8*vg.Inch, []*plot.Plot{top, bottom}, []vg.Length{3 * vg.Inch, 3 * vg.Inch})
	return &Plot{Name: "goaway_rate.png", Title: "GOAWAY rotations",
		Caption: "Connections the gateway drained (top) and Envoy's max_requests_reached (bottom), which counts every request that arrived at or over the limit: with many streams in flight it runs far ahead of the drains.",
		PNG:     png}, err
}

// p99Plot draws clients that time requests from when they were due (h2dial, gRPC) and those
// that time them from when they send them (fortio) on separate scales: the latter's latencies
// are a hundred times smaller.
func p99Plot(r *Run) (*Plot, error) {
	var dial, fortio []*analysis.Result
	for _, s := range r.ok() {
		if timedFromSend(s) {
			fortio = append(fortio, s)
		} else {
			dial = append(dial, s)
		}
	}
	var panels []*plot.Plot
	var heights []vg.Length
	for _, g := range []struct {
		title string
		rs    []*analysis.Result
	}{{"Client p99: h2dial and gRPC", dial}, {"Client p99: fortio", fortio}} {
		if len(g.rs) == 0 {
			continue
		}
		p, err := hbars(g.title, "p99 (ms)", g.rs, func(s *analysis.Result) float64 { return s.P99Ms }, clientColor)
		if err != nil {
			return nil, err
		}
		panels = append(panels, p)
		heights = append(heights, vg.Length(1.2+0.32*float64(len(g.rs)))*vg.Inch)
	}
	if len(panels) == 0 {
		return nil, nil
	}
	png, err := stack(8*vg.Inch, panels, heights)
	return &Plot{Name: "p99_comparison.png", Title: "p99 across scenarios",
		Caption: "The client's p99, dialing clients above and fortio below, each on its own scale. Where one worker serves every stream, requests queue behind each other on it. fortio's figures are smaller because it times a request from when it sends it, not from when it was due.", PNG: png}, err
}

func workerCVPlot(r *Run) (*Plot, error) {
	rs := r.ok()
	if len(rs) == 0 {
		return nil, nil
	}
	p, err := groupedBars("CV across the workers of each pod", "worker CV", rs, []string{"mean over pods", "max over pods"},
		[]func(*analysis.Result) float64{
			func(s *analysis.Result) float64 { return s.WorkerCVMean },
			func(s *analysis.Result) float64 { return s.WorkerCVMax },
		})
	if err != nil {
		return nil, err
	}
	png, err := render(p, 8*vg.Inch, 4.5*vg.Inch)
	caption := "Within-pod balance (H-E). With one worker per pod it is 0 by construction."
	if r.Concurrency > 1 {
		caption = "Within-pod balance (H-E): exact_balance should pull " + r.fed(balancedRole) + " below its control."
	}
	return &Plot{Name: "worker_cv.png", Title: "Worker CV", Caption: caption, PNG: png}, err
}

func pausePlot(r *Run) (*Plot, error) {
	rs := r.ok()
	if len(rs) == 0 {
		return nil, nil
	}
	p, err := hbars("Upstream flow-control pauses", "upstream_flow_control_paused_reading_total in the window", rs,
		func(s *analysis.Result) float64 { return s.FlowControlPaused }, clientColor)
	if err != nil {
		return nil, err
	}
	png, err := render(p, 8*vg.Inch, vg.Length(1.2+0.32*float64(len(rs)))*vg.Inch)
	return &Plot{Name: "flow_control_pauses.png", Title: "Flow-control pauses",
		Caption: "How often the gateway stopped reading an upstream because a downstream buffer was over its watermark (H-D, scenario 08).", PNG: png}, err
}

func leadPlot(r *Run) (*Plot, error) {
	name := r.fed(leadRole)
	s := r.Series[name]
	if s == nil || len(s.Elapsed) < 2 {
		return nil, nil
	}
	top, err := lines(name+": CV of active connections over time", "CV", s.Elapsed, map[string][]float64{"CV of cx_active": s.Column("cv_cx_active")})
	if err != nil {
		return nil, err
	}
	bottom, err := lines(name+": gateway p99 over time", "ms", s.Elapsed, map[string][]float64{"p99 (last second)": s.Column("p99_ms")})
	if err != nil {
		return nil, err
	}
	top.Legend.Top, bottom.Legend.Top = false, false // the lines run along the top
	png, err := stack(8*vg.Inch, []*plot.Plot{top, bottom}, []vg.Length{3 * vg.Inch, 3 * vg.Inch})
	return &Plot{Name: "he_timeseries.png", Title: "CV and p99 over " + name,
		Caption: "Through the whole window the CV of active connections sits at sqrt(n-1), one pod holding everything, while the gateway p99 holds at the hot worker's queueing delay. The CV says where the problem is from the moment the connection lands; p99 only says that there is one.", PNG: png}, err
}

func filterPlot(r *Run) (*Plot, error) {
	a, b := r.Scenarios[r.fed(filterRoles[0])], r.Scenarios[r.fed(filterRoles[1])]
	if !a.OK() || !b.OK() {
		return nil, nil
	}
	p, err := groupedBars("Filter-chain overhead", "ms or rps/100", []*analysis.Result{a, b}, []string{"p99 (ms)", "throughput (rps/100)"},
		[]func(*analysis.Result) float64{
			func(s *analysis.Result) float64 { return s.P99Ms },
			func(s *analysis.Result) float64 { return s.RPS / 100 },
		})
	if err != nil {
		return nil, err
	}
	png, err := render(p, 6*vg.Inch, 4*vg.Inch)
	return &Plot{Name: "filter_chain_overhead.png", Title: "Filter-chain overhead",
		Caption: a.Name + " against " + b.Name + " on the same hot worker: the JWT check and the filtered access log take a small share of its time.", PNG: png}, err
}

func rotationPlot(r *Run, name string) (*Plot, error) {
	s := r.Series[name]
	if s == nil || len(s.Elapsed) < 2 {
		return nil, nil
	}
	ys := map[string][]float64{}
	for i, pod := range s.Pods {
		ys[fmt.Sprintf("pod #%d", i+1)] = s.Column("rps:" + pod)
	}
	p, err := lines(name+": requests per second on each pod", "rps", s.Elapsed, ys)
	if err != nil {
		return nil, err
	}
	png, err := render(p, 8*vg.Inch, 4*vg.Inch)
	return &Plot{Name: "timeseries_" + name + ".png", Title: name + " over time",
		Caption: "Each rotation moves the work: a connection drains and its successor lands on a pod picked afresh.", PNG: png}, err
}
