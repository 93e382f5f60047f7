// Package capacity finds the highest constant arrival rate a gateway pool serves within a
// latency SLO, with a scenario's own knobs and with knobs set on top, and says what bound it:
// a saturated gateway worker, or a client that could not send at the rate it was asked for.
// Every step is one open-loop run of the scenario through the suite's per-scenario code path.
package capacity

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// Options configure a capacity search.
type Options struct {
	Target   gateway.Target
	Scenario *stacks.Scenario // as the catalog has it; its client must be open loop
	// Knobs are set on top of the scenario's for the second curve; none: one curve only.
	Knobs stacks.Knobs
	SLO   SLO
	// Start is the first rate offered (requests per second); Steps bounds the runs per curve.
	Start float64
	Steps int
	// Window is each run's measured window.
	Window time.Duration
	// RunSettings: OutDir is the results root (the command writes OutDir/<UTC timestamp>-<command>/).
	suite.RunSettings
}

// Defaults.
const (
	DefaultStart  = 500.0
	DefaultSteps  = 8
	DefaultWindow = 3 * time.Second
	// precision ends the search once the highest rate met and the lowest missed are this close.
	precision = 1.1
	minRate   = 10.0
)

// Capacity is capacity.json.
type Capacity struct {
	Scenario string             `json:"scenario"`
	SLO      SLO                `json:"slo"`
	Knobs    []stacks.KnobValue `json:"knobs,omitempty"`
	WindowS  float64            `json:"window_s"`
	suite.RunRecord
	Curves []*Curve `json:"curves"`
	// Ratio is the capacity with the knobs over the capacity without (0 when either is unknown).
	Ratio     float64 `json:"ratio,omitempty"`
	Statement string  `json:"statement"`
	// Rotation bounds what a rotation knob can buy a one-connection client (nil: not that case).
	Rotation *Rotation `json:"rotation,omitempty"`
	Dir      string    `json:"-"`
}

// Curve is one search: p99 (the SLO's percentile) against offered load.
type Curve struct {
	Name  string             `json:"name"` // "without" or "with"
	Label string             `json:"label"`
	Knobs []stacks.KnobValue `json:"knobs_set"`
	Steps []*Step            `json:"steps"`
	// Capacity is the highest rate that met the SLO (0: none did).
	Capacity float64 `json:"capacity_rps"`
	// Found says the search bracketed the capacity (a rate above it missed the SLO).
	Found bool `json:"found"`
	// Bound is what stopped the rate above: gateway, client, latency, or unknown; BoundDetail
	// gives the numbers.
	Bound       string `json:"bound,omitempty"`
	BoundDetail string `json:"bound_detail,omitempty"`
	Saturated   string `json:"saturated_worker,omitempty"`
}

// Step is one run at one offered rate.
type Step struct {
	Offered      float64 `json:"offered_rps"`
	Achieved     float64 `json:"achieved_rps"`
	LatencyMs    float64 `json:"latency_ms"` // the SLO's percentile, from the intended send time
	SendLagP99Ms float64 `json:"send_lag_p99_ms"`
	Unsent       int64   `json:"unsent"`
	Errors       int64   `json:"errors"`
	Requests     int64   `json:"requests"`
	CPUCores     float64 `json:"process_cpu_cores,omitempty"`
	LoadAvg      float64 `json:"load_average,omitempty"` // the machine's, after the run (where it is known)
	HotWorker    string  `json:"hot_worker,omitempty"`
	Busy         float64 `json:"hot_worker_busy,omitempty"`
	BusyMeasured bool    `json:"busy_measured"`
	// BusyPeak is the busiest worker's share within one sampling interval of the run: a
	// connection that rotates from pod to pod saturates one worker at a time, which the
	// window's average (Busy) spreads thin.
	BusyPeak    float64 `json:"hot_worker_busy_peak,omitempty"`
	Connections float64 `json:"connections"`
	// ConcurrentConnections is the most connections open at once (summed over pods) at a sample.
	ConcurrentConnections float64         `json:"concurrent_connections,omitempty"`
	Meets                 bool            `json:"meets_slo"`
	Why                   string          `json:"why,omitempty"` // why it missed
	Status                analysis.Status `json:"status"`
	Dir                   string          `json:"dir"`
}

// ErrInterrupted is the suite's: what finished is kept.
var ErrInterrupted = suite.ErrInterrupted

// Check says whether the scenario's client can drive an open-loop search.
func Check(sc *stacks.Scenario) error {
	k, ok := stacks.LookupClient(sc.Client.Kind)
	if !ok || !k.OpenLoop {
		var open []string
		for _, c := range stacks.ClientKinds {
			if c.OpenLoop {
				open = append(open, c.Kind)
			}
		}
		return fmt.Errorf("%s's client is %s, which cannot send at a constant rate timed from when each request was due; capacity takes a scenario whose client is %s",
			sc.Name, sc.Client.Kind, strings.Join(open, " or "))
	}
	return nil
}

// Run searches each curve. It returns the result even when interrupted (with ErrInterrupted).
func Run(ctx context.Context, o Options) (*Capacity, error) {
	if err := Check(o.Scenario); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Start <= 0 {
		o.Start = DefaultStart
	}
	if o.Steps < 1 {
		o.Steps = DefaultSteps
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	curves := []*Curve{{Name: "without", Label: "without (" + o.Scenario.Knobs.Short() + ")"}}
	if !o.Knobs.IsZero() {
		curves = append(curves, &Curve{Name: "with", Label: "with " + o.Knobs.Short(), Knobs: o.Knobs.Set()})
	}
	plan := make([]time.Duration, len(curves)*o.Steps)
	for i := range plan {
		plan[i] = suite.Planned(o.Target, o.Scenario, o.Window)
	}
	rn, err := suite.NewRunnerFor(ctx, o.Target, o.Window, o.RunSettings, plan)
	if err != nil {
		return nil, err
	}
	defer rn.Close()
	info := rn.Info()
	eff, _ := o.Target.Resolve(o.Scenario)
	pods, workers := suite.PoolSize(info, eff)
	c := &Capacity{Scenario: o.Scenario.Name, SLO: o.SLO, Knobs: o.Knobs.Set(), RunRecord: rn.Record(o.RunSettings),
		WindowS: o.Window.Seconds(), Curves: curves, Dir: filepath.Join(o.OutDir, o.Now().UTC().Format("20060102T150405Z")+"-capacity")}
	rn.Printf("igwlab capacity: %s on the %s target (%d pods x %d worker(s)), SLO %s, open-loop runs of %s from %.0f rps, at most %d per curve; results in %s\n",
		o.Scenario.Name, info.Name, pods, workers, o.SLO.Text, o.Window, o.Start, o.Steps, c.Dir)
	c.Pods, c.Concurrency = pods, workers // the scenario's pool, where it sets one
	save := func() { _ = measure.WriteJSON(filepath.Join(c.Dir, "capacity.json"), c) }
	save()
	s := &searcher{o: o, rn: rn, inProcess: info.Name == string(local.Kind), save: save}
	for _, cv := range curves {
		sc := o.Scenario
		if cv.Name == "with" {
			sc = o.Scenario.WithKnobs(o.Knobs)
		}
		s.curve(ctx, c.Dir, cv, sc)
	}
	c.End(ctx, o.Now())
	c.Ratio, c.Statement = statement(c)
	c.Rotation = rotation(c, o.Scenario, o.Knobs, pods*workers)
	var rep func() error
	if !o.NoReport {
		rep = func() error { return WriteReport(c) }
	}
	return c, rn.Finish(filepath.Join(c.Dir, "capacity.json"), c, c.Interrupted, rep)
}

type searcher struct {
	o         Options
	rn        *suite.Runner
	inProcess bool // the client runs in this process (its CPU is this process's)
	step      int
	save      func()
}

// curve brackets the capacity: doubling from the start rate while the SLO holds (halving when
// the start already misses it), then halving the gap, within the step budget.
func (s *searcher) curve(ctx context.Context, dir string, cv *Curve, sc *stacks.Scenario) {
	lo, hi := 0.0, 0.0 // highest rate met, lowest missed
	var hiStep *Step
	for range s.o.Steps {
		if ctx.Err() != nil {
			break
		}
		rate, ok := nextRate(s.o.Start, lo, hi)
		if !ok {
			break
		}
		st := s.run(ctx, dir, cv, sc, rate)
		if st.Status == analysis.StatusInterrupted {
			break
		}
		cv.Steps = append(cv.Steps, st)
		if st.Meets {
			lo = max(lo, rate)
		} else if hi == 0 || rate < hi {
			hi, hiStep = rate, st
		}
		cv.Capacity, cv.Found = lo, hi > 0
		s.save()
	}
	if hiStep != nil {
		cv.Bound, cv.BoundDetail, cv.Saturated = s.bound(hiStep)
	}
}

// nextRate is the next rate to try, or false when the search is done.
func nextRate(start, lo, hi float64) (float64, bool) {
	switch {
	case lo == 0 && hi == 0:
		return start, true
	case hi == 0:
		return lo * 2, true
	case lo == 0:
		return math.Round(hi / 2), hi/2 >= minRate
	case hi/lo <= precision:
		return 0, false
	}
	return math.Round((lo + hi) / 2), true
}

// run is one step: the scenario at rate, open loop, into its folder.
func (s *searcher) run(ctx context.Context, dir string, cv *Curve, lab *stacks.Scenario, rate float64) *Step {
	sc := *lab
	sc.Client.QPS, sc.Local.Client.QPS = rate, 0
	name := fmt.Sprintf("rate-%.0f", rate)
	st := &Step{Offered: rate, Dir: filepath.Join(cv.Name, name)}
	cpu0, cpuOK := processCPU()
	t0 := time.Now()
	res := s.rn.Run(ctx, s.step, fmt.Sprintf("%s %s %.0f rps", sc.Name, cv.Name, rate), &sc, filepath.Join(dir, st.Dir))
	s.step++
	if cpu1, ok := processCPU(); ok && cpuOK && s.inProcess {
		st.CPUCores = (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
	}
	st.LoadAvg = loadAverage()
	st.Status = res.Status
	if !res.OK() {
		st.Why = string(res.Status) + ": " + res.Reason
		return st
	}
	busy, measured := res.Busy()
	st.Achieved, st.LatencyMs, st.SendLagP99Ms, st.Unsent = res.RPS, s.o.SLO.Of(res), res.SendLagP99Ms, res.Unsent
	st.Errors, st.Requests, st.HotWorker, st.Busy, st.BusyMeasured = res.Errors, res.Requests, res.HotWorker, busy, measured
	st.Connections = res.ConnectionsTotal
	st.BusyPeak, st.ConcurrentConnections = res.Peaks.WorkerBusy, res.Peaks.CxActive
	var why []string
	if st.LatencyMs > s.o.SLO.LimitMs() {
		why = append(why, fmt.Sprintf("%s %.1f ms", s.o.SLO.Percentile, st.LatencyMs))
	}
	if st.Requests == 0 || float64(st.Errors) > 0.01*float64(st.Requests) {
		why = append(why, fmt.Sprintf("%d errors in %d requests", st.Errors, st.Requests))
	}
	if st.Achieved < 0.9*rate {
		why = append(why, fmt.Sprintf("served %.0f of %.0f rps", st.Achieved, rate))
	}
	st.Meets, st.Why = len(why) == 0, strings.Join(why, "; ")
	return st
}

// Thresholds of the bound: a worker this busy is saturated; a client whose send lag passes
// this share of the SLO, or that served less than this share of the rate, fell behind; a
// process using this share of the machine's cores starved its client.
const (
	saturatedBusy = 0.9
	lagShare      = 0.1
	servedShare   = 0.9
	cpuShare      = 0.9
)

// bound says what kept the first rate above capacity from meeting the SLO, as Nighthawk tells
// a saturated client from a saturated server: a gateway worker at saturatedBusy or more is the
// gateway's; a client that sent late or served less than it was offered, with no worker
// saturated, is the client's (and the machine's, when it had no CPU to give).
func (s *searcher) bound(st *Step) (kind, detail, worker string) {
	if st.Status != analysis.StatusOK {
		return "unknown", st.Why, ""
	}
	gw := st.BusyMeasured && max(st.Busy, st.BusyPeak) >= saturatedBusy
	late := st.SendLagP99Ms > lagShare*s.o.SLO.LimitMs() || st.Achieved < servedShare*st.Offered
	clientText := fmt.Sprintf("the client served %.0f of %.0f rps offered, sent p99 %.1f ms late, %d requests never sent", st.Achieved, st.Offered, st.SendLagP99Ms, st.Unsent)
	if s.inProcess {
		clientText += fmt.Sprintf(", this process (client and emulated pool) used %.2f of %d cores", st.CPUCores, runtime.NumCPU())
	}
	if st.LoadAvg > 0 {
		clientText += fmt.Sprintf(", load average %.1f", st.LoadAvg)
	}
	busyText := fmt.Sprintf("hottest worker %s %.0f%% busy", st.HotWorker, 100*st.Busy)
	if st.BusyPeak > st.Busy {
		busyText += fmt.Sprintf(" over the run, a worker %.0f%% busy at its peak sample", 100*st.BusyPeak)
	}
	switch {
	case gw:
		detail = fmt.Sprintf("at %.0f rps the SLO was missed (%s) with %s: a saturated gateway worker", st.Offered, st.Why, busyText)
		if late {
			detail += "; the client's lateness (" + clientText + ") follows from its requests waiting on that worker"
		}
		return "gateway", detail, st.HotWorker
	case late:
		detail = fmt.Sprintf("at %.0f rps no gateway worker was saturated (%s) but %s: the client could not keep the rate", st.Offered, busyText, clientText)
		if cores := float64(runtime.NumCPU()); st.LoadAvg > cores || s.inProcess && st.CPUCores >= cpuShare*cores {
			detail += fmt.Sprintf(" because the machine had no CPU to spare (%d cores)", runtime.NumCPU())
		}
		return "client", detail, ""
	case !st.BusyMeasured:
		return "gateway", fmt.Sprintf("at %.0f rps the client kept the rate (%s) and the SLO was missed (%s): the gateway, though this target does not measure per-worker busy time to name the worker", st.Offered, clientText, st.Why), ""
	}
	return "latency", fmt.Sprintf("at %.0f rps neither side was saturated (%s; %s) and the SLO was missed (%s): requests queued on a worker between bursts", st.Offered, busyText, clientText, st.Why), st.HotWorker
}

// statement is the ratio and the sentence that reports it.
func statement(c *Capacity) (float64, string) {
	without := c.Curves[0]
	if len(c.Curves) < 2 {
		return 0, capText(without, c.SLO)
	}
	with := c.Curves[1]
	knobs := strings.Join(shortKnobs(with.Knobs), " ")
	if without.Capacity == 0 || with.Capacity == 0 {
		return 0, fmt.Sprintf("no ratio: %s; %s", capText(without, c.SLO), capText(with, c.SLO))
	}
	r := with.Capacity / without.Capacity
	s := fmt.Sprintf("with %s this pool serves %.1fx the load at %s (%.0f rps against %.0f rps)", knobs, r, c.SLO.Text, with.Capacity, without.Capacity)
	for _, cv := range c.Curves {
		if !cv.Found {
			s += fmt.Sprintf("; %s: every rate tried met the SLO, so its capacity is at least %.0f rps", cv.Name, cv.Capacity)
		}
	}
	var clientBound []string
	for _, cv := range c.Curves {
		if cv.Bound == "client" {
			clientBound = append(clientBound, cv.Name)
		}
	}
	if len(clientBound) > 0 {
		s += fmt.Sprintf("; but the client, not the gateway, bound %s: the ratio measures what the client could send, not what the knob does; rerun on a quieter machine, with a lower --start, or with slower emulated workers (--service-time)", strings.Join(clientBound, " and "))
	}
	// The search itself keeps a core or more busy; half as much load again as the machine has
	// cores means other work took CPU the pool and its client needed.
	if load, cores := busiest(c), runtime.NumCPU(); c.Target == string(local.Kind) && load > 1.5*float64(cores) {
		s += fmt.Sprintf("; the machine's load average reached %.1f on %d cores during the search, so the emulated pool and its client waited for CPU as well as for its workers (reconnects and tails first): rerun on a quieter machine before trusting the ratio", load, cores)
	}
	return r, s
}

// busiest is the highest load average the machine showed after any step.
func busiest(c *Capacity) float64 {
	most := 0.0
	for _, cv := range c.Curves {
		for _, st := range cv.Steps {
			most = max(most, st.LoadAvg)
		}
	}
	return most
}

func capText(cv *Curve, slo SLO) string {
	switch {
	case cv.Capacity == 0 && len(cv.Steps) == 0:
		return cv.Name + ": no run finished"
	case cv.Capacity == 0:
		return fmt.Sprintf("%s: no rate tried met %s (lowest %.0f rps)", cv.Name, slo.Text, cv.Steps[len(cv.Steps)-1].Offered)
	case !cv.Found:
		return fmt.Sprintf("%s: at least %.0f rps at %s (every rate tried met it)", cv.Name, cv.Capacity, slo.Text)
	}
	return fmt.Sprintf("%s: %.0f rps at %s", cv.Name, cv.Capacity, slo.Text)
}

func shortKnobs(kv []stacks.KnobValue) []string {
	out := make([]string, len(kv))
	for i, k := range kv {
		out[i] = k.Path[strings.LastIndex(k.Path, ".")+1:] + "=" + k.Value
	}
	return out
}
