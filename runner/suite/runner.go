package suite

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Runner runs one scenario at a time into a folder its caller names, each exactly as a suite
// runs its scenarios (apply, wait for the knobs on every pod, settle, warm up, measure, write
// the folder): the code path of commands that run one scenario many ways (sweep, capacity).
type Runner struct {
	r *run
}

// NewRunner reads the target's Info and readies the progress for planned runs (for the ETA;
// more may run). Of o it uses Target, Duration, Progress*, ApplyTimeout and AdminTimeout.
func NewRunner(ctx context.Context, o Options, planned []time.Duration) (*Runner, error) {
	info, err := o.Target.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = 90 * time.Second
	}
	sum := &Summary{Target: info.Name, Pods: info.Pods, Concurrency: info.Concurrency, Info: info}
	return &Runner{r: &run{o: o, info: info, sum: sum, prog: newProgress(o.Progress, o.ProgressTTY, o.ProgressWidth, planned)}}, nil
}

// Info is the target's.
func (x *Runner) Info() gateway.Info { return x.r.info }

// Run runs step i (0-based, for the progress line) of the caller's plan: sc into dir, labelled
// name. It never returns nil (see the suite's scenarios); a run cut short by ctx is
// StatusInterrupted.
func (x *Runner) Run(ctx context.Context, i int, name string, sc *stacks.Scenario, dir string) *analysis.Result {
	x.r.prog.scenario(i, name, sc.Title)
	res := x.r.guarded(ctx, sc, dir)
	x.r.prog.finish(i, oneLine(res))
	return res
}

// Printf writes a progress line (nothing when progress is off).
func (x *Runner) Printf(format string, a ...any) { x.r.progressf(format, a...) }

// Close ends the live progress line.
func (x *Runner) Close() { x.r.prog.close() }

// Planned is how long a run of sc on t takes, for an ETA: settle, warm-up and the window (d
// when non-zero, else the scenario's own on that target).
func Planned(t gateway.Target, sc *stacks.Scenario, d time.Duration) time.Duration {
	return r0planned(t, sc, d)
}

// Names are the gateway's stat names, discovered by the first run (zero before it).
func (x *Runner) Names() stats.Names { return x.r.names }

// Finish ends a command's run: its JSON written to path, then its report (nil: none; one that
// fails is said on the progress, the JSON stays), and ErrInterrupted when the run was.
func (x *Runner) Finish(path string, v any, interrupted bool, report func() error) error {
	if err := measure.WriteJSON(path, v); err != nil {
		return err
	}
	if report != nil {
		if err := report(); err != nil {
			x.Printf("report: %v\n", err)
		}
	}
	if interrupted {
		return ErrInterrupted
	}
	return nil
}

// RunSettings are what a command that runs scenarios through a Runner takes besides its own
// settings: where results go, its command line, progress, the apply timeout, the clock.
type RunSettings struct {
	// OutDir is the results root; the command writes a folder of its own under it.
	OutDir  string
	Command []string
	// Progress receives progress; nil is quiet.
	Progress      io.Writer
	ProgressTTY   bool
	ProgressWidth int
	ApplyTimeout  time.Duration
	Now           func() time.Time
	// NoReport skips the plots and report.html.
	NoReport bool
}

// NewRunnerFor is NewRunner for a command's settings, with the window of each run.
func NewRunnerFor(ctx context.Context, t gateway.Target, window time.Duration, s RunSettings, planned []time.Duration) (*Runner, error) {
	return NewRunner(ctx, Options{Target: t, Duration: window, Progress: s.Progress, ProgressTTY: s.ProgressTTY,
		ProgressWidth: s.ProgressWidth, ApplyTimeout: s.ApplyTimeout}, planned)
}

// RunRecord heads a command's JSON: where it ran, with what command line, when, and whether it
// finished or was interrupted.
type RunRecord struct {
	Target      string    `json:"target"`
	Pods        int       `json:"pods"`
	Concurrency int       `json:"concurrency"`
	Command     []string  `json:"command,omitempty"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Complete    bool      `json:"complete"`
	Interrupted bool      `json:"interrupted,omitempty"`
}

// Record starts a command's record on this runner's target.
func (x *Runner) Record(s RunSettings) RunRecord {
	i := x.r.info
	return RunRecord{Target: i.Name, Pods: i.Pods, Concurrency: i.Concurrency, Command: s.Command, Started: s.Now().UTC()}
}

// End marks the record finished now, or interrupted when ctx was cancelled.
func (r *RunRecord) End(ctx context.Context, now time.Time) {
	r.Interrupted = ctx.Err() != nil
	r.Complete = !r.Interrupted
	r.Finished = now.UTC()
}
