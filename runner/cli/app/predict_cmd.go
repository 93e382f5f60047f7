package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/fix"
	"github.com/igwlab/igwlab/runner/predict"
	"github.com/igwlab/igwlab/stacks"
)

type predictArgs struct {
	targetArgs
	scenario, out, catalog string
	repeat                 int
	duration               time.Duration
	asJSON                 bool
	gw                     gatewayFlags
}

func (e *Env) predictCmd() *cobra.Command {
	a := &predictArgs{}
	c := Command("predict", "run a scenario (a file diagnose --save-scenario wrote, or the catalog's) as it is and under each lever that applies, and rank the levers",
		func(cmd *cobra.Command) error { return e.runPredict(cmd.Context(), a) })
	c.Example = `  igwlab diagnose --prometheus http://prometheus:9090 --save-scenario mine.yaml
  igwlab predict --scenario mine.yaml --target sim --repeat 20
  igwlab predict --scenario mine.yaml              # on the local target, the pool scaled as the file's local section says
  igwlab predict --scenario 02-trigger --target sim`
	fs := c.Flags()
	a.targetArgs.register(fs, "predict", e.Lab != nil)
	fs.StringVar(&a.scenario, "scenario", "", "a scenario file (NAME.yaml, as diagnose --save-scenario writes it) or a catalog scenario's name (required)")
	fs.IntVar(&a.repeat, "repeat", 1, "runs per lever (1..100), each a placement of its own, the same placements for every lever; the ranking uses their medians")
	fs.DurationVar(&a.duration, "duration", 0, "measured window per run, overriding the scenario's on the target (1s..24h; 0 keeps it)")
	fs.StringVar(&a.out, "out", "results", "results root; predict writes <out>/<UTC timestamp>-predict/")
	fs.StringVar(&a.catalog, "catalog", "", catalogHelp)
	fs.BoolVarP(&a.quiet, "q", "q", false, "no progress on stderr")
	fs.BoolVar(&a.asJSON, "json", false, "print predict.json to stdout instead of the table")
	a.gw.register(fs)
	completeScenarios(c, "scenario")
	return c
}

// runPredict checks every input before anything runs, then predicts.
func (e *Env) runPredict(ctx context.Context, a *predictArgs) error {
	if a.scenario == "" {
		return Usagef("--scenario is required: a file diagnose --save-scenario wrote, or a catalog scenario's name")
	}
	if a.repeat < 1 || a.repeat > 100 {
		return Usagef("--repeat %d: allowed 1..100", a.repeat)
	}
	if d := a.duration; d != 0 && (d < time.Second || d > 24*time.Hour) {
		return Usagef("--duration %s: allowed 1s..24h", d)
	}
	if err := a.gw.check(); err != nil {
		return err
	}
	sc, err := e.predictScenario(a)
	if err != nil {
		return err
	}
	t, progress, err := e.openRun(ctx, &a.targetArgs, sc)
	if err != nil || t == nil {
		return err
	}
	defer t.Close()
	p, err := predict.Run(ctx, predict.Options{Target: t, Scenario: sc, Repeat: a.repeat, Duration: a.duration, RunSettings: e.runSettings(a.out, progress)})
	if p == nil {
		return err
	}
	if b := p.Best; b != nil && b.Knob != "" {
		def := fix.Istio
		if d := sc.Diagnosed; d != nil && d.Gateway == "" {
			def = fix.Envoy
		}
		p.Fix, err = a.gw.render(def, map[string]string{b.Knob: b.Value})
		if err != nil {
			return err
		}
	}
	return e.outcome(a.asJSON, p, progress, p.Dir, "predict.json, sweep.json, report.html, one folder per lever",
		"the levers that finished are saved in "+p.Dir, err)
}

// predictScenario is --scenario: a file when it names one, else the catalog's.
func (e *Env) predictScenario(a *predictArgs) (*stacks.Scenario, error) {
	if !strings.HasSuffix(a.scenario, ".yaml") {
		return e.scenarioFor(a.catalog, a.scenario, a.targetName)
	}
	b, err := os.ReadFile(a.scenario)
	if err != nil {
		return nil, UsageError{fmt.Errorf("--scenario: %w", err)}
	}
	sc, err := stacks.ParseFile(a.scenario, b)
	if err != nil {
		return nil, UsageError{err}
	}
	return sc, refuseTargets([]*stacks.Scenario{sc}, a.targetName)
}
