// Package suite runs scenarios against a target: for each, put its knobs in force, let the
// pool settle, warm up, snapshot every pod, drive the load while sampling once a second,
// snapshot again, and write the results folder; then make the hypothesis calls.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/report"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Options configure a suite run.
type Options struct {
	Target     gateway.Target
	Catalog    *stacks.Catalog
	Only, Skip []string
	SkipEval   bool
	// Duration overrides every scenario's measured window when non-zero.
	Duration time.Duration
	Repeat   int
	// OutDir is the results root; the run writes OutDir/<UTC timestamp>/.
	OutDir string
	// RunDir, when set, is used as is (resume).
	RunDir string
	// Resume is the summary of an interrupted run in RunDir: its finished scenario runs are
	// kept as they are and only the rest run (see LoadResume).
	Resume *Summary
	// Command is the command line that started the run, kept in summary.json so that
	// `igwlab suite --resume` can continue it with the same settings.
	Command []string
	// Progress receives progress; nil is quiet. ProgressTTY redraws a live line in place.
	Progress    io.Writer
	ProgressTTY bool
	// ProgressWidth is the terminal's width in columns (0: unknown, no cut).
	ProgressWidth int
	// ApplyTimeout bounds the wait for knobs to show on every pod.
	ApplyTimeout time.Duration
	// AdminTimeout bounds one attempt to read a pod's admin (default gateway.AdminTimeout).
	AdminTimeout time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// NoReport skips the plots and report.html.
	NoReport bool
	// Set holds knobs on top of every scenario's (a user's EnvoyFilters, --envoyfilter), and
	// EnvoyFilters says where they came from and what they did not apply.
	Set          stacks.Knobs
	EnvoyFilters []*envoyfilter.Imported
}

// Summary is summary.json: what ran, with what, and the calls. Other tools may rely on the
// fields target, pods, concurrency, scenarios.<name>.{cv, connections, connections_total,
// worker_cv_mean, goaways, rps, p99_ms} and hypotheses.<id>.{verdict, ratio}.
type Summary struct {
	Target      string      `json:"target"`
	Pods        int         `json:"pods"`
	Concurrency int         `json:"concurrency"`
	Repeat      int         `json:"repeat"`
	Command     []string    `json:"command,omitempty"`
	Resumed     []time.Time `json:"resumed,omitempty"`
	Started     time.Time   `json:"started"`
	Finished    time.Time   `json:"finished"`
	Complete    bool        `json:"complete"`
	Interrupted bool        `json:"interrupted,omitempty"`
	// EnvoyFilters are the user's EnvoyFilters whose knobs held in every scenario
	// (--envoyfilter): what each set, and what the lab did not apply.
	EnvoyFilters []*envoyfilter.Imported       `json:"envoy_filters,omitempty"`
	Info         gateway.Info                  `json:"info"`
	Names        stats.Names                   `json:"names"`
	Order        []string                      `json:"order"`
	Scenarios    map[string]*analysis.Result   `json:"scenarios"`
	Runs         map[string][]*analysis.Result `json:"runs,omitempty"`
	Hypotheses   map[string]analysis.Verdict   `json:"hypotheses"`
	// Feeds are the scenarios the calls were judged on, by call and role: the run's own where a
	// user's scenario shares a role with a built-in one (stacks.Catalog.FeedsIn).
	Feeds stacks.Feeds `json:"feeds,omitempty"`
	// ScenarioSeconds is the wall time of each scenario, every repetition and phase included
	// (apply, settle, warm-up, window, collection).
	ScenarioSeconds map[string]float64 `json:"scenario_seconds,omitempty"`
	Evaluation      []analysis.Verdict `json:"-"`
	Dir             string             `json:"-"`
}

// ErrInterrupted reports a run stopped by its context (Ctrl-C); its results are kept.
var ErrInterrupted = errors.New("interrupted")

// Run executes the suite. It returns the summary even when interrupted.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = 90 * time.Second
	}
	selected, err := o.Catalog.Select(o.Only, o.Skip)
	if err != nil {
		return nil, err
	}
	info, err := o.Target.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	dir := o.RunDir
	if dir == "" {
		dir = filepath.Join(o.OutDir, o.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sum := &Summary{Target: info.Name, Pods: info.Pods, Concurrency: info.Concurrency, Repeat: o.Repeat,
		Started: o.Now().UTC(), Info: info, Scenarios: map[string]*analysis.Result{},
		Runs: map[string][]*analysis.Result{}, Hypotheses: map[string]analysis.Verdict{}, Dir: dir, Command: o.Command,
		EnvoyFilters: o.EnvoyFilters}
	for _, sc := range selected {
		sum.Order = append(sum.Order, sc.Name)
		sum.Scenarios[sc.Name] = &analysis.Result{Name: sc.Name, Title: sc.Title, Hypothesis: sc.Hypothesis,
			Client: sc.Client.Kind, Status: analysis.StatusNotRun}
	}
	// done[name] is how many runs of a scenario a resumed run already has.
	done := map[string]int{}
	if o.Resume != nil {
		if done, err = resumeInto(sum, o.Resume, selected, o.Now()); err != nil {
			return nil, err
		}
	}
	var plan []time.Duration
	for _, sc := range selected {
		for rep := done[sc.Name]; rep < o.Repeat; rep++ {
			plan = append(plan, r0planned(o.Target, sc, o.Duration))
		}
	}
	r := &run{o: o, info: info, dir: dir, sum: sum, names: sum.Names, prog: newProgress(o.Progress, o.ProgressTTY, o.ProgressWidth, plan)}
	defer r.prog.close()
	if o.Resume != nil {
		r.progressf("%s\n", resumeText(sum, done))
	}
	r.progressf("igwlab: %s target, %d pods x %d worker(s); %d scenario(s) x %d run(s); results in %s\n",
		info.Name, info.Pods, info.Concurrency, len(selected), o.Repeat, dir)
	_ = measure.WriteJSON(filepath.Join(dir, "summary.json"), sum)

	step := 0
	for _, sc := range selected {
		for rep := 1; rep <= o.Repeat; rep++ {
			if ctx.Err() != nil {
				break
			}
			sdir := filepath.Join(dir, sc.Name)
			if o.Repeat > 1 {
				sdir = filepath.Join(sdir, fmt.Sprintf("run-%d", rep))
			}
			if rep <= done[sc.Name] {
				continue // kept from the interrupted run
			}
			if o.Resume != nil {
				// Whatever an interrupted attempt left here is partial: start the folder afresh.
				if err := os.RemoveAll(sdir); err != nil {
					return sum, err
				}
			}
			r.prog.scenario(step, sc.Name+repText(rep, o.Repeat), sc.Title)
			t0 := o.Now()
			run := sc
			if !o.Set.IsZero() {
				run = sc.WithKnobs(o.Set)
			}
			res := r.guarded(ctx, run, sdir)
			if sum.ScenarioSeconds == nil {
				sum.ScenarioSeconds = map[string]float64{}
			}
			sum.ScenarioSeconds[sc.Name] += o.Now().Sub(t0).Seconds()
			sum.Runs[sc.Name] = append(sum.Runs[sc.Name], res)
			sum.Scenarios[sc.Name] = representative(sum.Runs[sc.Name])
			r.prog.finish(step, oneLine(res))
			step++
			_ = measure.WriteJSON(filepath.Join(dir, "summary.json"), sum)
		}
	}
	sum.Interrupted = ctx.Err() != nil
	sum.Complete = !sum.Interrupted
	for _, name := range sum.Order {
		if res := sum.Scenarios[name]; res.Status == analysis.StatusNotRun && sum.Interrupted {
			res.Reason = "the run was interrupted before this scenario"
		}
	}
	if o.Repeat == 1 {
		sum.Runs = nil
	}
	if !o.SkipEval {
		sum.Evaluation, sum.Feeds = r.evaluate()
		for _, v := range sum.Evaluation {
			sum.Hypotheses[v.ID] = v
		}
		var b strings.Builder
		analysis.WriteBlock(&b, sum.Header(), sum.Evaluation)
		_ = measure.WriteFile(filepath.Join(dir, "evaluation.txt"), []byte(b.String()))
	}
	sum.Finished = o.Now().UTC()
	if err := measure.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		return sum, err
	}
	if !o.NoReport {
		// Made from the files just written, exactly as `igwlab report` makes it again later.
		if run, err := report.Load(dir); err != nil {
			r.progressf("report: %v\n", err)
		} else if _, err := report.Write(dir, run); err != nil {
			r.progressf("report: %v\n", err)
		}
	}
	if sum.Interrupted {
		return sum, ErrInterrupted
	}
	return sum, nil
}

// Header describes the run for its evaluation block.
func (s *Summary) Header() analysis.Header {
	return analysis.Header{Target: s.Target, Pods: s.Pods, Concurrency: s.Concurrency, Repeat: s.Repeat,
		EnvoyDefaults: s.Info.EnvoyDefaults, ClientRTTMs: s.Info.ClientRTTMs, UpstreamRTTMs: s.Info.UpstreamRTTMs}
}

func (r *run) evaluate() ([]analysis.Verdict, stacks.Feeds) {
	runs := map[string][]*analysis.Result{}
	for name, res := range r.sum.Runs {
		runs[name] = res
	}
	if len(runs) == 0 {
		for name, res := range r.sum.Scenarios {
			runs[name] = []*analysis.Result{res}
		}
	}
	feeds := r.o.Catalog.FeedsIn(func(name string) bool { return len(runs[name]) > 0 })
	return evaluate(runs, r.info.Pods, r.o.Catalog, feeds), feeds
}

// evaluate makes the calls on the scenarios feeds names, leaving out those fed only by optional
// scenarios when none of them ran: a run that did not ask for them reads as it did before they
// existed.
func evaluate(runs map[string][]*analysis.Result, pods int, cat *stacks.Catalog, feeds stacks.Feeds) []analysis.Verdict {
	var out []analysis.Verdict
	for _, v := range analysis.Evaluate(runs, pods, feeds) {
		optional := v.Verdict == analysis.Skipped && len(v.Scenarios) > 0
		for _, n := range v.Scenarios {
			optional = optional && cat.Optional(n) && len(runs[n]) == 0
		}
		if !optional {
			out = append(out, v)
		}
	}
	return out
}

// representative picks the run whose CV is the median of the repetitions, so the numbers shown
// for a scenario all come from one real run.
func representative(rs []*analysis.Result) *analysis.Result {
	var ok []*analysis.Result
	for _, r := range rs {
		if r.OK() {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return rs[len(rs)-1]
	}
	sorted := append([]*analysis.Result(nil), ok...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].CV < sorted[j].CV })
	return sorted[(len(sorted)-1)/2]
}

func repText(rep, n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (run %d of %d)", rep, n)
}

// OneLine is a run's outcome in a line, as the progress shows it.
func OneLine(r *analysis.Result) string { return oneLine(r) }

func oneLine(r *analysis.Result) string {
	if !r.OK() {
		return string(r.Status) + ": " + r.Reason
	}
	s := fmt.Sprintf("CV %.3f over %d connections (%s); %.0f rps, p99 %.1f ms; hottest worker %s busy",
		r.CV, int(r.ConnectionsTotal), r.ChanceVerdict, r.RPS, r.P99Ms, r.BusyText())
	if r.GoAways > 0 {
		s += fmt.Sprintf("; %d drained", int(r.GoAways))
	}
	if r.Disturbed {
		s += "; DISTURBED"
		if len(r.Faults) > 0 {
			s += " (" + r.Faults[0]
			if len(r.Faults) > 1 {
				s += fmt.Sprintf(", and %d more in result.json", len(r.Faults)-1)
			}
			s += ")"
		}
	}
	if len(r.Warnings) > 0 {
		s += fmt.Sprintf("; %d warning(s) in result.json", len(r.Warnings))
	}
	return s
}

type run struct {
	o     Options
	info  gateway.Info
	dir   string
	sum   *Summary
	names stats.Names
	prog  *progress

	warnMu   sync.Mutex
	warnings []string
}

// guarded runs one scenario and turns a panic in igwlab itself into that scenario's failure,
// with the stack kept in its folder, so one bug costs one scenario and not the whole run.
func (r *run) guarded(ctx context.Context, sc *stacks.Scenario, dir string) (res *analysis.Result) {
	defer func() {
		if v := recover(); v != nil {
			_ = measure.WriteFile(filepath.Join(dir, "panic.txt"), []byte(fmt.Sprintf("panic: %v\n\n%s", v, debug.Stack())))
			res = &analysis.Result{Name: sc.Name, Title: sc.Title, Hypothesis: sc.Hypothesis, Client: sc.Client.Kind,
				Status: analysis.StatusFailed, Reason: fmt.Sprintf("igwlab failed on this scenario: %v (a bug: the stack is in panic.txt; please report it)", v)}
		}
	}()
	return r.scenario(ctx, sc, dir)
}

// adm reads admins for the scenario being run; retried reads become its warnings.
func (r *run) adm() measure.Admins {
	return measure.Admins{T: r.o.Target, Timeout: r.o.AdminTimeout, Warn: r.warn}
}

// warn records a problem the scenario got over, for its warnings.
func (r *run) warn(s string) {
	r.warnMu.Lock()
	r.warnings = append(r.warnings, s)
	r.warnMu.Unlock()
}

// takeWarnings returns the warnings gathered since the last call.
func (r *run) takeWarnings() []string {
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

func (r *run) progressf(format string, a ...any) { r.prog.printf(format, a...) }

// r0planned is how long a scenario is expected to take, for the ETA.
func r0planned(t gateway.Target, sc *stacks.Scenario, override time.Duration) time.Duration {
	eff, _ := t.Resolve(sc)
	d := eff.Load.Duration.D()
	if override > 0 {
		d = override
	}
	return eff.Load.Settle.D() + eff.Load.Warmup.D() + d + time.Second
}
