// Package sweep runs one scenario at each of a knob's values, on any target, through the
// suite's own per-scenario code path, and finds the value with the least churn whose spread is
// as good as chance: what to set, what it costs, and the runs behind it.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// Options configure a sweep.
type Options struct {
	Target   gateway.Target
	Scenario *stacks.Scenario // as the catalog has it
	Knob     stacks.KnobSpec
	// Streams sweeps the client's streams (StreamsAxis, CheckStreams) instead of Knob.
	Streams bool
	// Workers sweeps the gateway pods' Envoy workers (WorkersAxis) instead of Knob, under
	// CPULimit when the scenario names no CPU limit of its own.
	Workers  bool
	CPULimit stacks.CPU
	// Set holds knobs on top of the scenario's in every run (never the swept knob).
	Set stacks.Knobs
	// EnvoyFilters are the user's files some of Set came from (--envoyfilter), recorded in
	// sweep.json.
	EnvoyFilters []*envoyfilter.Imported
	// Values are the knob's values, each already checked against its range
	// (KnobSpec.ParseKnobValues), or the streams (ParseStreams).
	Values []string
	Repeat int
	// Duration overrides the measured window of each run when non-zero.
	Duration time.Duration
	// WellSpread is the connection count of the well-spread client the recommendation's
	// threshold is drawn from (default DefaultWellSpread).
	WellSpread int
	// Variants, when set, are whole scenarios run in place of a knob's values, one per value of
	// Values (predict's levers, each a label such as "max_requests_per_connection-300"): Knob,
	// Streams and Workers are then unused and no recommendation is made; the caller ranks.
	Variants map[string]*stacks.Scenario
	// Paired seeds a forked run by its repeat rather than its place, so that every value's
	// run r meets the same placement draw (a side-by-side comparison of levers).
	Paired bool
	// Command names the results folder, <OutDir>/<UTC timestamp>-<Command> ("sweep" if empty).
	Command string
	// RunSettings: OutDir is the results root (the command writes OutDir/<UTC timestamp>-<command>/).
	suite.RunSettings
}

// DefaultWellSpread is the well-spread client of the recommendation: 100 connections placed
// at random, as the baseline scenario's 100 independent clients are.
const DefaultWellSpread = 100

// Sweep is sweep.json.
type Sweep struct {
	Scenario string   `json:"scenario"`
	Knob     string   `json:"knob"`
	Unit     string   `json:"unit"`
	Values   []string `json:"values"`
	// Set are the knobs held on top of the scenario's in every run (--set).
	Set []stacks.KnobValue `json:"set,omitempty"`
	// EnvoyFilters are the user's EnvoyFilters among them (--envoyfilter).
	EnvoyFilters []*envoyfilter.Imported `json:"envoy_filters,omitempty"`
	Repeat       int                     `json:"repeat"`
	TLS          bool                    `json:"tls"`
	WindowS      float64                 `json:"window_s"`
	Window       string                  `json:"window"` // where the window comes from
	suite.RunRecord
	Points []*Point `json:"points"`
	// Threshold is the most CV a value may show to count as well spread (see Rule).
	Threshold float64 `json:"threshold"`
	// Listener is the gateway listener measured (its stats' listener_address).
	Listener       string          `json:"listener,omitempty"`
	Recommendation *Recommendation `json:"recommendation,omitempty"`
	// Spread is what a sweep of the client's streams finds, in place of a recommendation.
	Spread *Spread `json:"spread,omitempty"`
	Dir    string  `json:"-"`
}

// Point is one value of the knob: its runs, and the numbers of its median run.
type Point struct {
	Value  string          `json:"value"`
	Dir    string          `json:"dir"` // relative to the sweep's folder
	Status analysis.Status `json:"status"`
	Reason string          `json:"reason,omitempty"`
	Numbers
	Runs []Numbers `json:"runs,omitempty"`
	// Bands are the measures over the value's runs, each a placement (with --repeat).
	Bands *Bands `json:"bands,omitempty"`
}

// Numbers are what one run of a value measured.
type Numbers struct {
	Dir           string          `json:"dir,omitempty"`
	Status        analysis.Status `json:"run_status,omitempty"`
	CV            float64         `json:"cv"`
	Chance        *analysis.Band  `json:"chance,omitempty"`
	ChanceVerdict string          `json:"chance_verdict,omitempty"`
	Connections   float64         `json:"connections"`
	Drains        float64         `json:"drains"`
	DrainsPerS    float64         `json:"drains_per_s"`
	TLSPerS       float64         `json:"tls_handshakes_per_s,omitempty"`
	P99Ms         float64         `json:"p99_ms"`
	RPS           float64         `json:"rps"`
	HotWorker     string          `json:"hot_worker,omitempty"`
	Busy          string          `json:"hot_worker_busy"`
	// BusyMax is the hottest worker's busy share (0 where the target reads none).
	BusyMax float64 `json:"hot_worker_busy_share,omitempty"`
	WindowS float64 `json:"window_s"`
	// The over-time measures of a scenario with events (a scale-out) or rotation: the time
	// from the first event to balance (-1: not within the window), the reconnect storm's
	// peak, and the reconnect bursts (lockstep).
	BalancedS      *float64 `json:"balanced_s,omitempty"`
	StormPeak      float64  `json:"storm_peak_cps,omitempty"`
	Bursts         int      `json:"bursts,omitempty"`
	BurstShare     float64  `json:"burst_share,omitempty"` // The CPU the pods used and their throttling, where the target reads their kubelets.
	Limited        bool     `json:"cpu_limited,omitempty"`
	UsageCores     float64  `json:"cpu_usage_cores,omitempty"`
	ThrottledShare float64  `json:"cpu_throttled_share,omitempty"`
	ThrottledS     float64  `json:"cpu_throttled_s,omitempty"`
}

// ErrInterrupted is the suite's: what finished is kept.
var ErrInterrupted = suite.ErrInterrupted

// Run sweeps the knob. It returns the sweep even when interrupted (with ErrInterrupted).
func Run(ctx context.Context, o Options) (*Sweep, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	if o.WellSpread < 1 {
		o.WellSpread = DefaultWellSpread
	}
	if len(o.Values) == 0 {
		return nil, errors.New("sweep: no values")
	}
	first := o.at(o.Values[0])
	plan := make([]time.Duration, len(o.Values)*o.Repeat)
	for i := range plan {
		plan[i] = suite.Planned(o.Target, first, o.Duration)
	}
	rn, err := suite.NewRunnerFor(ctx, o.Target, o.Duration, o.RunSettings, plan)
	if err != nil {
		return nil, err
	}
	defer rn.Close()
	info := rn.Info()
	cmd := o.Command
	if cmd == "" {
		cmd = "sweep"
	}
	dir := filepath.Join(o.OutDir, o.Now().UTC().Format("20060102T150405Z")+"-"+cmd)
	eff, _ := o.Target.Resolve(first)
	knob, unit := o.Knob.Path, o.Knob.Unit
	switch {
	case o.Streams:
		knob, unit = StreamsAxis, "streams"
	case o.Workers:
		knob, unit = WorkersAxis, "workers"
	case o.Variants != nil:
		knob, unit = LeverAxis, "lever"
	}
	sw := &Sweep{Scenario: o.Scenario.Name, Knob: knob, Unit: unit, Values: o.Values, Set: o.Set.Set(), EnvoyFilters: o.EnvoyFilters, Repeat: o.Repeat,
		RunRecord: rn.Record(o.RunSettings), TLS: tlsOn(info), Dir: dir, WindowS: eff.Load.Duration.D().Seconds(),
		Window: fmt.Sprintf("the scenario's window on the %s target", info.Name)}
	if o.Duration > 0 {
		sw.WindowS, sw.Window = o.Duration.Seconds(), "--duration"
	}
	pods, workers := suite.PoolSize(info, eff)
	sw.Pods, sw.Concurrency = pods, workers // the scenario's pool, where it sets one
	sw.Threshold = analysis.Chance(o.WellSpread, max(2, pods)).Hi
	for _, v := range o.Values {
		sw.Points = append(sw.Points, &Point{Value: v, Dir: folder(sw.Knob, v), Status: analysis.StatusNotRun})
	}
	rn.Printf("igwlab sweep: %s on the %s target (%d pods x %d worker(s)), %s at %s; %d run(s) per value of %s each; results in %s\n",
		o.Scenario.Name, info.Name, pods, workers, sw.Knob, strings.Join(o.Values, ", "), o.Repeat,
		time.Duration(sw.WindowS*float64(time.Second)), dir)
	save := func() { _ = measure.WriteJSON(filepath.Join(dir, "sweep.json"), sw) }
	save()
	var jobs []job
	for pi, p := range sw.Points {
		sc := o.at(p.Value)
		for rep := 1; rep <= o.Repeat; rep++ {
			label := fmt.Sprintf("%s %s", sc.Name, p.Dir)
			if o.Repeat > 1 {
				label += fmt.Sprintf(" (run %d of %d)", rep, o.Repeat)
			}
			jobs = append(jobs, job{point: pi, rep: rep, sc: sc, label: label, dir: runDir(dir, p.Dir, rep, o.Repeat)})
		}
	}
	byPoint := make([][]*analysis.Result, len(sw.Points))
	settle := func(pi int) {
		p := sw.Points[pi]
		p.Runs = nil
		for i, res := range byPoint[pi] {
			n := numbersOf(res)
			if o.Repeat > 1 {
				n.Dir = filepath.Join(p.Dir, fmt.Sprintf("run-%d", i+1))
			}
			p.Runs = append(p.Runs, n)
		}
		p.settle(byPoint[pi], o.Workers)
		save()
	}
	var forkErr error
	if f, ok := forkable(o); ok {
		var results []*analysis.Result
		results, sw.Listener, forkErr = runForked(ctx, f, o, rn, jobs)
		for i, res := range results {
			if res != nil {
				byPoint[jobs[i].point] = append(byPoint[jobs[i].point], res)
			}
		}
		for pi := range sw.Points {
			settle(pi)
		}
	} else {
		for step, j := range jobs {
			if ctx.Err() != nil {
				break
			}
			byPoint[j.point] = append(byPoint[j.point], rn.Run(ctx, step, j.label, j.sc, j.dir))
			if j.rep == o.Repeat {
				settle(j.point)
			}
		}
		for pi, runs := range byPoint {
			if n := len(runs); n > 0 && n < o.Repeat { // interrupted within the value's runs
				settle(pi)
			}
		}
	}
	if forkErr != nil {
		return nil, forkErr
	}
	sw.End(ctx, o.Now())
	for _, p := range sw.Points {
		if p.Status == analysis.StatusNotRun && sw.Interrupted {
			p.Reason = "the sweep was interrupted before this value"
		}
	}
	if o.Repeat == 1 {
		for _, p := range sw.Points {
			p.Runs = nil
		}
	}
	if sw.Listener == "" {
		sw.Listener = rn.Names().Listener
	}
	switch {
	case o.Variants != nil:
		// The caller (predict) ranks the levers.
	case o.Streams:
		sw.Spread = spreadOf(sw, o, &eff, info.EnvoyDefaults)
	case o.Workers:
		sw.Recommendation = recommendWorkers(sw, eff.Pool.CPULimit)
	case len(eff.Events) > 0:
		sw.Recommendation = recommendOverTime(sw, o.Knob)
	default:
		sw.Recommendation = recommend(sw, o.Knob, o.WellSpread)
	}
	var rep func() error
	if !o.NoReport {
		rep = func() error { return WriteReport(sw) }
	}
	return sw, rn.Finish(filepath.Join(dir, "sweep.json"), sw, sw.Interrupted, rep)
}

// settle sets the point's status and numbers from its runs: those of the run whose CV (p99 in
// a sweep of the workers, byP99) is the median of the finished ones, so that every number
// shown comes from one real run.
func (p *Point) settle(runs []*analysis.Result, byP99 bool) {
	var ok []*analysis.Result
	for _, r := range runs {
		if r.OK() {
			ok = append(ok, r)
		}
	}
	switch {
	case len(ok) > 0:
		sort.SliceStable(ok, func(i, j int) bool {
			if byP99 {
				return ok[i].P99Ms < ok[j].P99Ms
			}
			return ok[i].CV < ok[j].CV
		})
		p.Status, p.Reason, p.Numbers = analysis.StatusOK, "", numbersOf(ok[(len(ok)-1)/2])
		p.Bands = bandsOf(ok)
		if len(ok) < len(runs) {
			p.Reason = fmt.Sprintf("%d of %d runs finished", len(ok), len(runs))
		}
	case len(runs) > 0:
		last := runs[len(runs)-1]
		p.Status, p.Reason = analysis.StatusFailed, last.Reason
		if last.Status == analysis.StatusInterrupted {
			p.Status = analysis.StatusInterrupted
		}
	}
}

func numbersOf(r *analysis.Result) Numbers {
	n := Numbers{Status: r.Status, CV: r.CV, Chance: r.Chance, ChanceVerdict: r.ChanceVerdict, Connections: r.ConnectionsTotal,
		Drains: r.GoAways, P99Ms: r.P99Ms, RPS: r.RPS, HotWorker: r.HotWorker, Busy: r.BusyText(), BusyMax: r.BusyMax, WindowS: r.WindowS}
	if r.WindowS > 0 {
		n.DrainsPerS = r.GoAways / r.WindowS
		n.TLSPerS = r.TLSHandshakes / r.WindowS
	}
	if c := r.CPU; c != nil {
		n.Limited, n.UsageCores, n.ThrottledShare, n.ThrottledS = c.Limited, c.UsageCores, c.ThrottledShare, c.ThrottledS
	}
	if o := r.OverTime; o != nil {
		if len(o.Events) > 0 {
			b := o.BalancedAtS
			n.BalancedS = &b
		}
		n.StormPeak, n.Bursts, n.BurstShare = o.StormPeak, len(o.Bursts), o.BurstShare
	}
	return n
}

// at is the scenario at one value of the sweep.
func (o Options) at(v string) *stacks.Scenario {
	base := o.Scenario
	if !o.Set.IsZero() {
		base = base.WithKnobs(o.Set)
	}
	if sc, ok := o.Variants[v]; ok {
		if !o.Set.IsZero() {
			return sc.WithKnobs(o.Set)
		}
		return sc
	}
	if o.Streams {
		return withStreams(base, v)
	}
	if o.Workers {
		return withWorkers(base, v, o.CPULimit)
	}
	return base.WithKnobs(knobsOf(o.Knob, v))
}

// knobsOf is the knob set to value (already checked).
func knobsOf(spec stacks.KnobSpec, value string) stacks.Knobs {
	var k stacks.Knobs
	_ = spec.Set(&k, value)
	return k
}

// folder names a value's results folder: "max_requests_per_connection=300", "concurrency=500".
func folder(path, value string) string {
	name := path[strings.LastIndex(path, ".")+1:] + "=" + value
	return strings.NewReplacer("/", "_", "{}", "set").Replace(name)
}

// tlsOn reads whether the target terminates TLS from its Info.
func tlsOn(info gateway.Info) bool {
	b, _ := info.Details["tls"].(bool)
	return b
}

// X is the value as a number for a plot's axis: the count (of a knob or of streams), a
// duration in seconds, and for other knobs the value's place in the sweep.
func X(spec stacks.KnobSpec, value string, i int) float64 {
	if spec.Path == "" {
		if n, err := strconv.ParseFloat(value, 64); err == nil {
			return n
		}
	}
	var k stacks.Knobs
	if spec.Set(&k, value) == nil {
		switch v, _ := spec.Value(&k); x := v.(type) {
		case uint32:
			return float64(x)
		case time.Duration:
			return x.Seconds()
		}
	}
	return float64(i + 1)
}

// LeverAxis is the axis of a sweep over whole variants of a scenario (Options.Variants).
const LeverAxis = "lever"
