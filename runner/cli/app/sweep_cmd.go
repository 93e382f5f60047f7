package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/sweep"
	"github.com/igwlab/igwlab/stacks"
)

type sweepArgs struct {
	targetArgs
	scenario, knob, values, out string
	catalog, streams            string
	set                         KnobSets
	repeat, wellSpread          int
	duration                    time.Duration
	asJSON                      bool
}

func (e *Env) sweepCmd() *cobra.Command {
	a := &sweepArgs{}
	c := Command("sweep", "run a scenario at each value of a knob and recommend the value with the least churn that spreads as chance does",
		func(cmd *cobra.Command) error { return e.runSweep(cmd.Context(), a) })
	c.Example = `  igwlab sweep --scenario 04-fortio --knob hcm.common_http_protocol_options.max_requests_per_connection --values 30,100,300,1000,3000
  igwlab sweep --scenario 02-trigger --knob hcm.common_http_protocol_options.max_requests_per_connection --values 100..100000x10 --repeat 3
  igwlab sweep --scenario 04-fortio --knob hcm.common_http_protocol_options.max_requests_per_connection --values 100,1000 --tls
  igwlab sweep --scenario 14-upload-window --client-streams 500,1000,1100,2100 --envoy-defaults 1.36
  igwlab sweep --scenario 02-trigger --client-streams 100..10000x10 --set hcm.http2_protocol_options.max_concurrent_streams=1024
  igwlab sweep --scenario 21-cpu-limit-8-workers --concurrency 1,2,4,8 --cpu-limit 2`
	fs := c.Flags()
	a.targetArgs.register(fs, "sweep", e.Lab != nil)
	a.pf.AllowConcurrencyList("a list (1,2,4,8 or 1..8x2) sweeps the workers in place of a knob, under the CPU limit of the scenario's pool.cpu_limit or --cpu-limit, and recommends a worker count")
	fs.StringVar(&a.scenario, "scenario", "", "scenario to run at each value (required; igwlab scenarios lists them)")
	fs.StringVar(&a.knob, "knob", "", "knob to sweep, by its path (required; igwlab knobs lists them with their ranges)")
	fs.StringVar(&a.values, "values", "", "the knob's values: a,b,c, or a log range lo..hixF (100..100000x10 is 100,1000,10000,100000); each checked against Envoy's range")
	fs.StringVar(&a.streams, "client-streams", "", "sweep the client's streams instead of a knob: h2dial's workers on one shared transport, a,b,c or lo..hixF (1..100000); finds where it starts to spread over the stream cap in force")
	fs.Var(&a.set, "set", "knob=value set on top of the scenario's for every run (repeatable), e.g. a stream cap to sweep the client's streams against")
	fs.IntVar(&a.repeat, "repeat", 1, "runs per value (1..100); the table shows each value's median run, the recommendation lists the runs that agree")
	fs.DurationVar(&a.duration, "duration", 0, "measured window per run, overriding the scenario's on the target (1s..24h; 0 keeps it)")
	fs.IntVar(&a.wellSpread, "well-spread", sweep.DefaultWellSpread, "connections of the well-spread client whose chance band sets the recommendation's threshold (2..100000)")
	fs.StringVar(&a.out, "out", "results", "results root; the sweep writes <out>/<UTC timestamp>-sweep/")
	fs.StringVar(&a.catalog, "catalog", "", catalogHelp)
	fs.BoolVarP(&a.quiet, "q", "q", false, "no progress on stderr")
	fs.BoolVar(&a.asJSON, "json", false, "print sweep.json to stdout instead of the table")
	if f := fs.Lookup("tls"); f != nil {
		f.Usage += " (the local target's; TLS handshakes per second are measured there only)"
	}
	completeScenarios(c, "scenario")
	completeKnobs(c, "knob", false)
	return c
}

// runSweep checks every input before anything runs, then sweeps.
func (e *Env) runSweep(ctx context.Context, a *sweepArgs) error {
	if list := a.pf.ConcurrencyList(); list != "" {
		return e.runWorkersSweep(ctx, a, list)
	}
	if a.streams != "" {
		if a.knob != "" || a.values != "" {
			return Usagef("--client-streams sweeps the client's streams: it takes no --knob or --values (one axis per sweep)")
		}
		if a.scenario == "" {
			return Usagef("--scenario is required, e.g. --scenario 02-trigger --client-streams 500,1000,1100")
		}
	} else if a.scenario == "" || a.knob == "" || a.values == "" {
		return Usagef("--scenario, --knob and --values are required, e.g. --scenario 04-fortio --knob hcm.common_http_protocol_options.max_requests_per_connection --values 30,100,300 (or --client-streams in place of --knob and --values)")
	}
	var spec stacks.KnobSpec
	var values []string
	var err error
	if a.streams != "" {
		if values, err = sweep.ParseStreams(a.streams); err != nil {
			return Usagef("--client-streams: %v", err)
		}
	} else {
		if spec, err = stacks.LookupKnob(a.knob); err != nil {
			return Usagef("--knob: %v", err)
		}
		if values, err = spec.ParseKnobValues(a.values); err != nil {
			return Usagef("--values: %v", err)
		}
		if _, set := spec.Get(&a.set.K); set {
			return Usagef("--set %s: that is the knob the sweep varies; --set holds other knobs", spec.Path)
		}
	}
	if err := a.checkCommon(); err != nil {
		return err
	}
	sc, err := e.scenarioFor(a.catalog, a.scenario, a.targetName)
	if err != nil {
		return err
	}
	if a.streams != "" {
		if err := sweep.CheckStreams(sc); err != nil {
			return Usagef("--client-streams: %v", err)
		}
	}
	t, progress, err := e.openRun(ctx, &a.targetArgs, sc)
	if err != nil || t == nil {
		return err
	}
	defer t.Close()
	set, err := a.ef.With(a.set.K)
	if err != nil {
		return err
	}
	if _, held := spec.Get(&a.ef.K); held && spec.Path != "" {
		return Usagef("--envoyfilter sets %s, the knob the sweep varies: sweep it without that file, or another knob", spec.Path)
	}
	sw, err := sweep.Run(ctx, sweep.Options{Target: t, Scenario: sc, Knob: spec, Streams: a.streams != "", Set: set, EnvoyFilters: a.ef.Files, Values: values, Repeat: a.repeat,
		Duration: a.duration, WellSpread: a.wellSpread, RunSettings: e.runSettings(a.out, progress)})
	if sw == nil {
		return err
	}
	return e.outcome(a.asJSON, sw, progress, sw.Dir, "sweep.json, report.html, one folder per value",
		"the values that finished are saved in "+sw.Dir+" and sweep.json marks the rest", err)
}

// runWorkersSweep sweeps the gateway pods' workers under a CPU limit.
func (e *Env) runWorkersSweep(ctx context.Context, a *sweepArgs, list string) error {
	if a.knob != "" || a.values != "" || a.streams != "" {
		return Usagef("--concurrency with a list sweeps the workers: it takes no --knob, --values or --client-streams (one axis per sweep)")
	}
	if a.scenario == "" {
		return Usagef("--scenario is required, e.g. --scenario 21-cpu-limit-8-workers --concurrency 1,2,4,8")
	}
	values, err := sweep.ParseWorkers(list)
	if err != nil {
		return Usagef("--concurrency: %v", err)
	}
	if err := a.checkCommon(); err != nil {
		return err
	}
	sc, err := e.scenarioFor(a.catalog, a.scenario, a.targetName)
	if err != nil {
		return err
	}
	limit := sc.Pool.CPULimit
	if a.targetName == string(local.Kind) {
		if l := sc.WithLocal().Pool.CPULimit; l > 0 {
			limit = l
		} else if cfg, err := a.pf.Config(); err == nil && cfg.CPULimit > 0 {
			limit = stacks.CPU(cfg.CPULimit)
		}
	}
	if limit == 0 {
		return Usagef("--concurrency %s: a sweep of the workers needs a CPU limit to run them under: the scenario's pool.cpu_limit, or --cpu-limit on the local target (one core per worker, the default, would move with the workers)", list)
	}
	t, progress, err := e.openRun(ctx, &a.targetArgs, sc)
	if err != nil || t == nil {
		return err
	}
	defer t.Close()
	if _, ok := t.(gateway.Sized); !ok {
		return fmt.Errorf("the %s target cannot size its pods per run: a sweep of the workers needs one that can", a.targetName)
	}
	set, err := a.ef.With(a.set.K)
	if err != nil {
		return err
	}
	sw, err := sweep.Run(ctx, sweep.Options{Target: t, Scenario: sc, Workers: true, CPULimit: limit, Set: set, EnvoyFilters: a.ef.Files, Values: values, Repeat: a.repeat,
		Duration: a.duration, WellSpread: a.wellSpread, RunSettings: e.runSettings(a.out, progress)})
	if sw == nil {
		return err
	}
	return e.outcome(a.asJSON, sw, progress, sw.Dir, "sweep.json, report.html, one folder per value",
		"the values that finished are saved in "+sw.Dir+" and sweep.json marks the rest", err)
}

// checkCommon checks the flags every kind of sweep takes.
func (a *sweepArgs) checkCommon() error {
	if a.repeat < 1 || a.repeat > 100 {
		return Usagef("--repeat %d: allowed 1..100", a.repeat)
	}
	if d := a.duration; d != 0 && (d < time.Second || d > 24*time.Hour) {
		return Usagef("--duration %s: allowed 1s..24h", d)
	}
	if a.wellSpread < 2 || a.wellSpread > 100000 {
		return Usagef("--well-spread %d: allowed 2..100000", a.wellSpread)
	}
	return nil
}

// runSettings are a command's results root and progress, with the command line as typed.
func (e *Env) runSettings(out string, progress io.Writer) suite.RunSettings {
	return suite.RunSettings{OutDir: out, Command: e.Args, Progress: progress,
		ProgressTTY: progress != nil && isTerminal(e.Stderr), ProgressWidth: termWidth(e.Stderr)}
}

// openRun opens the target of a command that runs sc, after refusing --tls where it does not
// apply, and refuses sc if the target cannot run it; a nil target means the command line went
// to igwlab-lab, with its result.
func (e *Env) openRun(ctx context.Context, a *targetArgs, sc *stacks.Scenario) (gateway.Target, io.Writer, error) {
	if err := a.localOnlyTLS(); err != nil {
		return nil, nil, err
	}
	t, err := e.openTarget(ctx, a)
	if err != nil || t == nil {
		return t, nil, err
	}
	if err := checkOnTarget(t, []*stacks.Scenario{sc}); err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, a.progress(e.Stderr), nil
}

// outcome prints a command's result (its JSON with --json, else its text), says on the
// progress where its results are, and turns an interruption into the error that says what was
// kept.
func (e *Env) outcome(asJSON bool, v interface{ WriteText(io.Writer) error }, progress io.Writer, dir, files, kept string, err error) error {
	if asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(v); werr != nil {
			return werr
		}
	} else if werr := v.WriteText(e.Stdout); werr != nil {
		return werr
	}
	if progress != nil {
		io.WriteString(progress, "results: "+dir+" ("+files+")\n")
	}
	if errors.Is(err, suite.ErrInterrupted) {
		return fmt.Errorf("%w: %s", err, kept)
	}
	return err
}

// scenarioFor is --scenario from the catalog (and --catalog's folder), refused if target
// cannot run it.
func (e *Env) scenarioFor(dir, name, target string) (*stacks.Scenario, error) {
	cat, err := e.loadCatalog(dir)
	if err != nil {
		return nil, err
	}
	sc, err := cat.MustGet(name)
	if err != nil {
		return nil, UsageError{fmt.Errorf("--scenario: %w", err)}
	}
	return sc, refuseTargets([]*stacks.Scenario{sc}, target)
}

// localOnlyTLS refuses --tls on a target that does not take the pool's flags.
func (t *targetArgs) localOnlyTLS() error {
	if f := t.flags.Lookup("tls"); f != nil && f.Changed && t.targetName != string(local.Kind) {
		return Usagef("--tls: terminates TLS on the %s target's emulated pool only; the %s target's gateway is what the lab deploys", local.Kind, t.targetName)
	}
	return nil
}

// progress is where progress goes: stderr, or nowhere with -q.
func (t *targetArgs) progress(stderr io.Writer) io.Writer {
	if t.quiet {
		return nil
	}
	return stderr
}
