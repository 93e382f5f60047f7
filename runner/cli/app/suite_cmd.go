package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	_ "github.com/igwlab/igwlab/runner/gateway/simulated" // --target sim
	"github.com/igwlab/igwlab/runner/suite"
)

// suiteArgs are the suite command's settings, parsed from the command line or, for --resume,
// from the command line the interrupted run recorded.
type suiteArgs struct {
	targetArgs
	fs               *pflag.FlagSet
	only, skip       listFlag
	out, catalog     string
	resume           string
	skipEval, asJSON bool
	duration         time.Duration
	repeat           int
}

// targetArgs choose and size the target of a command that runs scenarios (suite, sweep,
// capacity).
type targetArgs struct {
	pf         local.PoolFlags
	sf         StackFlags
	ef         EnvoyFilters
	targetName string
	quiet      bool
	// harness runs the simulated target on the local target's machine (--harness).
	harness bool
	// command names the command for a hand-on to igwlab-lab ("suite").
	command string
	flags   *pflag.FlagSet
}

// register binds --target, the pool's and the stack's flags.
func (t *targetArgs) register(fs *pflag.FlagSet, command string, lab bool) {
	t.command, t.flags = command, fs
	targets := gateway.KindHelp()
	if !lab {
		targets += "; " + LabBinary + " adds the real lab's"
	}
	fs.StringVar(&t.targetName, "target", string(gateway.Drivers()[0].Kind), "where to run: "+targets)
	fs.Var(&t.ef, "envoyfilter", "an EnvoyFilter of yours (repeatable): the knobs its patches set hold in every run, on top of the scenario's; what the lab does not model is named, never dropped")
	t.pf.Register(fs)
	fs.BoolVar(&t.harness, "harness", false, "--target sim: clients bound by the local target's two-core machine, as make run's are (what the calibration tier compares); off, the clients keep up with any pool, as a production pool's many client machines do")
	t.sf.Register(fs)
}

// register binds the suite's flags to fs.
func (a *suiteArgs) register(fs *pflag.FlagSet, lab bool) {
	a.fs = fs
	a.targetArgs.register(fs, "suite", lab)
	fs.Var(&a.only, "only", "run only these scenarios (comma-separated); a scenario's control comes along")
	fs.Var(&a.skip, "skip", "skip these scenarios (comma-separated)")
	fs.BoolVar(&a.skipEval, "skip-eval", false, "do not print the hypothesis evaluation")
	fs.DurationVar(&a.duration, "duration", 0, "measured window per scenario, overriding the catalog (1s..24h; 0 keeps the catalog's)")
	fs.IntVar(&a.repeat, "repeat", 1, "runs per scenario (1..100); verdicts report median, spread and agreement")
	fs.StringVar(&a.out, "out", "results", "results root; each run writes <out>/<UTC timestamp>/")
	fs.StringVar(&a.catalog, "catalog", "", catalogHelp)
	fs.BoolVarP(&a.quiet, "q", "q", false, "no progress on stderr")
	fs.BoolVar(&a.asJSON, "json", false, "print summary.json to stdout instead of the evaluation block")
	fs.StringVar(&a.resume, "resume", "", "continue the interrupted run in this results folder, with its settings: finished scenarios are kept, the rest run")
}

func (e *Env) suiteCmd() *cobra.Command {
	a := &suiteArgs{}
	c := Command("suite", "run scenarios against a target and print the hypothesis evaluation", func(cmd *cobra.Command) error {
		return e.runSuite(cmd.Context(), a, e.Args)
	})
	a.register(c.Flags(), e.Lab != nil)
	return c
}

// resumeArgs swaps in the settings an interrupted run recorded. Only -q and -json may be given
// beside --resume: any other setting would make the resumed run a different run.
func resumeArgs(a *suiteArgs, lab bool) (*suiteArgs, *suite.Summary, error) {
	var extra []string
	a.fs.Visit(func(f *pflag.Flag) {
		if f.Name != "resume" && f.Name != "q" && f.Name != "json" {
			extra = append(extra, "--"+f.Name)
		}
	})
	if len(extra) > 0 {
		return nil, nil, Usagef("--resume continues a run with the settings it recorded; drop %s", strings.Join(extra, ", "))
	}
	prev, err := suite.LoadResume(a.resume)
	if err != nil {
		return nil, nil, err
	}
	b := &suiteArgs{}
	fs := pflag.NewFlagSet("suite", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	b.register(fs, lab)
	recorded := prev.Command[1:]
	if err := fs.Parse(normalizeFlags(fs, recorded)); err != nil || fs.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		return nil, nil, fmt.Errorf("%s: the recorded command line %q: %w", a.resume, strings.Join(prev.Command, " "), err)
	}
	b.quiet, b.asJSON, b.resume = a.quiet, a.asJSON, a.resume
	return b, prev, nil
}

// normalizeFlags is Normalize for one flag set.
func normalizeFlags(fs *pflag.FlagSet, args []string) []string {
	c := &cobra.Command{}
	c.Flags().AddFlagSet(fs)
	return Normalize(c, args)
}

// runSuite runs the suite; command is the command line as typed, which the run records so that
// --resume can take it up again.
func (e *Env) runSuite(ctx context.Context, a *suiteArgs, command []string) error {
	stdout, stderr := e.Stdout, e.Stderr
	var prev *suite.Summary
	if a.resume != "" {
		var err error
		if a, prev, err = resumeArgs(a, e.Lab != nil); err != nil {
			return err
		}
		command = prev.Command
	}
	if d := a.duration; d != 0 && (d < time.Second || d > 24*time.Hour) {
		return Usagef("--duration %s: allowed 1s..24h", d)
	}
	if a.repeat < 1 || a.repeat > 100 {
		return Usagef("--repeat %d: allowed 1..100", a.repeat)
	}
	cat, err := e.loadCatalog(a.catalog)
	if err != nil {
		return err
	}
	if a.only, err = selection(a.catalog, a.only); err != nil {
		return err
	}
	sel, err := cat.Select(a.only, a.skip)
	if err != nil {
		return UsageError{err}
	}
	if err := refuseTargets(sel, a.targetName); err != nil {
		return err
	}
	t, err := e.openTarget(ctx, &a.targetArgs)
	if err != nil || t == nil {
		return err
	}
	defer t.Close()
	if err := checkOnTarget(t, sel); err != nil {
		return err
	}
	var progress io.Writer = stderr
	if a.quiet {
		progress = nil
	}
	if progress != nil && len(a.ef.Files) > 0 {
		io.WriteString(progress, a.ef.Text())
	}
	sum, err := suite.Run(ctx, suite.Options{Target: t, Catalog: cat, Only: a.only, Skip: a.skip, EnvoyFilters: a.ef.Files, Set: a.ef.K,
		SkipEval: a.skipEval, Duration: a.duration, Repeat: a.repeat, OutDir: a.out, Progress: progress,
		RunDir: a.resume, Resume: prev, Command: command,
		ProgressTTY: progress != nil && isTerminal(stderr), ProgressWidth: termWidth(stderr)})
	if sum == nil {
		return err
	}
	if a.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(sum); e != nil {
			return e
		}
	} else if len(sum.Evaluation) > 0 {
		analysis.WriteBlock(stdout, sum.Header(), sum.Evaluation)
	}
	if progress != nil {
		io.WriteString(progress, "results: "+sum.Dir+"\n")
	}
	if errors.Is(err, suite.ErrInterrupted) {
		// Said even with -q: it is how the user gets the rest of the run.
		return fmt.Errorf("%w: finished scenarios are saved in %s and summary.json marks the rest as not run; to run the rest: igwlab suite --resume %s",
			err, sum.Dir, sum.Dir)
	}
	return err
}

// openTarget opens the target --target names. A kind this binary does not hold hands the
// whole command line to igwlab-lab (a nil target and its result come back).
func (e *Env) openTarget(ctx context.Context, a *targetArgs) (gateway.Target, error) {
	kind := gateway.Kind(a.targetName)
	d, err := gateway.Lookup(kind)
	if err != nil {
		if e.Lab == nil {
			return nil, e.HandOn(ctx, "igwlab "+a.command+" --target "+a.targetName)
		}
		return nil, Usagef("--target %q: allowed %s", a.targetName, gateway.KindList())
	}
	pool, err := a.pf.ConfigWithin(d.MaxPods, d.MaxWorkers)
	if err != nil {
		return nil, UsageError{err}
	}
	if err := a.sf.Check(); err != nil {
		return nil, err
	}
	var progress io.Writer = e.Stderr
	if a.quiet {
		progress = nil
	}
	if a.harness && kind != "sim" {
		return nil, Usagef("--harness: only --target sim takes it (the local target runs on the machine itself)")
	}
	return gateway.Open(ctx, kind, gateway.Options{Pool: pool, Harness: a.harness, Progress: progress, Stack: gateway.StackOptions{
		Name: a.sf.Name, Inline: a.sf.Inline, InlineDir: a.sf.InlineDir, Kubeconfig: a.sf.Kubeconfig, Context: a.sf.Context}})
}
