package app

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/capacity"
	"github.com/igwlab/igwlab/stacks"
)

type capacityArgs struct {
	targetArgs
	scenario, slo, out, catalog string
	knobs                       KnobSets
	start                       float64
	steps                       int
	window                      time.Duration
	asJSON                      bool
}

func (e *Env) capacityCmd() *cobra.Command {
	a := &capacityArgs{}
	c := Command("capacity", "find the highest constant arrival rate the pool serves within a latency SLO, with and without knobs, and what bounds it",
		func(cmd *cobra.Command) error { return e.runCapacity(cmd.Context(), a) })
	c.Example = `  igwlab capacity --scenario 02-trigger --slo p99=100ms --knob hcm.common_http_protocol_options.max_requests_per_connection=1000
  igwlab capacity --scenario 03-mcs-cap --slo p99.9=250ms --knob hcm.http2_protocol_options.max_concurrent_streams=50 --steps 10`
	fs := c.Flags()
	a.targetArgs.register(fs, "capacity", e.Lab != nil)
	fs.StringVar(&a.scenario, "scenario", "", "scenario to drive (required); its client must be open loop (h2dial), run at each rate tried")
	fs.StringVar(&a.slo, "slo", "", "latency objective, pNN=DURATION (required): p50, p90, p99 or p99.9, at most 1ms..60s, e.g. p99=50ms")
	fs.Var(&a.knobs, "knob", "knob=value set on top of the scenario's for the second curve (repeatable); without it, one curve")
	fs.Float64Var(&a.start, "start", capacity.DefaultStart, "first offered rate, requests per second (10..1000000); the search doubles it while the SLO holds")
	fs.IntVar(&a.steps, "steps", capacity.DefaultSteps, "most runs per curve (2..30)")
	fs.DurationVar(&a.window, "window", capacity.DefaultWindow, "measured window of each run (1s..10m)")
	fs.StringVar(&a.out, "out", "results", "results root; the search writes <out>/<UTC timestamp>-capacity/")
	fs.StringVar(&a.catalog, "catalog", "", catalogHelp)
	fs.BoolVarP(&a.quiet, "q", "q", false, "no progress on stderr")
	fs.BoolVar(&a.asJSON, "json", false, "print capacity.json to stdout instead of the table")
	completeScenarios(c, "scenario")
	completeKnobs(c, "knob", true)
	return c
}

// runCapacity checks every input before anything runs, then searches.
func (e *Env) runCapacity(ctx context.Context, a *capacityArgs) error {
	if a.scenario == "" || a.slo == "" {
		return Usagef("--scenario and --slo are required, e.g. --scenario 02-trigger --slo p99=100ms")
	}
	slo, err := capacity.ParseSLO(a.slo)
	if err != nil {
		return Usagef("--slo %v", err)
	}
	if a.start < 10 || a.start > 1e6 {
		return Usagef("--start %g: allowed 10..1000000 requests per second", a.start)
	}
	if a.steps < 2 || a.steps > 30 {
		return Usagef("--steps %d: allowed 2..30", a.steps)
	}
	if a.window < time.Second || a.window > 10*time.Minute {
		return Usagef("--window %s: allowed 1s..10m", a.window)
	}
	sc, err := e.scenarioFor(a.catalog, a.scenario, a.targetName)
	if err != nil {
		return err
	}
	if err := capacity.Check(sc); err != nil {
		return Usagef("--scenario: %v", err)
	}
	if !a.ef.K.IsZero() {
		for _, kv := range a.knobs.K.Set() {
			spec, _ := stacks.Lookup(kv.Path)
			if _, ok := spec.Get(&a.ef.K); ok {
				return Usagef("%s is set by --knob and by --envoyfilter: the file's knobs hold in both curves, --knob's in the second", kv.Path)
			}
		}
		sc = sc.WithKnobs(a.ef.K) // both curves run with the file's knobs
	}
	t, progress, err := e.openRun(ctx, &a.targetArgs, sc)
	if err != nil || t == nil {
		return err
	}
	defer t.Close()
	c, err := capacity.Run(ctx, capacity.Options{Target: t, Scenario: sc, Knobs: a.knobs.K, SLO: slo, Start: a.start, Steps: a.steps,
		Window: a.window, RunSettings: e.runSettings(a.out, progress)})
	if c == nil {
		return err
	}
	return e.outcome(a.asJSON, c, progress, c.Dir, "capacity.json, report.html, one folder per run",
		"the runs that finished are saved in "+c.Dir+" and capacity.json marks the search interrupted", err)
}
