package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/stacks"
)

func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("suite", stderr)
	var only, skip listFlag
	var pf poolFlags
	var sf stackFlags
	targetName := fs.String("target", stacks.TargetLocal, "where to run: local (emulated pool on loopback), k3d (the Pulumi lab stack), existing (the stack on your cluster)")
	fs.Var(&only, "only", "run only these scenarios (comma-separated); a scenario's control comes along")
	fs.Var(&skip, "skip", "skip these scenarios (comma-separated)")
	skipEval := fs.Bool("skip-eval", false, "do not print the hypothesis evaluation")
	duration := fs.Duration("duration", 0, "measured window per scenario, overriding the catalog (>= 1s)")
	repeat := fs.Int("repeat", 1, "runs per scenario (1..100); verdicts report median, spread and agreement")
	out := fs.String("out", "results", "results root; each run writes <out>/<UTC timestamp>/")
	catalogDir := fs.String("catalog", "", "also load the scenario files in this folder")
	quiet := fs.Bool("q", false, "no progress on stderr")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the evaluation block")
	pf.register(fs)
	sf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *duration != 0 && (*duration < time.Second || *duration > 24*time.Hour) {
		return usagef("--duration %s: allowed 1s..24h", *duration)
	}
	if *repeat < 1 || *repeat > 100 {
		return usagef("--repeat %d: allowed 1..100", *repeat)
	}
	cat, err := loadCatalog(*catalogDir)
	if err != nil {
		return err
	}
	if _, err := cat.Select(only, skip); err != nil {
		return UsageError{err}
	}
	var t target.Target
	switch *targetName {
	case stacks.TargetLocal:
		cfg, err := pf.config()
		if err != nil {
			return err
		}
		l, err := target.NewLocal(cfg)
		if err != nil {
			return err
		}
		t = l
	case "k3d", "existing":
		var pulumiOut io.Writer = stderr
		if *quiet {
			pulumiOut = nil
		}
		if t, err = clusterTarget(ctx, *targetName, &sf, pulumiOut); err != nil {
			return err
		}
	default:
		return usagef("--target %q: allowed local, k3d, existing", *targetName)
	}
	defer t.Close()
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}
	sum, err := suite.Run(ctx, suite.Options{Target: t, TargetName: *targetName, Catalog: cat, Only: only, Skip: skip,
		SkipEval: *skipEval, Duration: *duration, Repeat: *repeat, OutDir: *out, Progress: progress,
		ProgressTTY: progress != nil && isTerminal(stderr), ProgressWidth: termWidth(stderr)})
	if sum == nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(sum); e != nil {
			return e
		}
	} else if len(sum.Evaluation) > 0 {
		analysis.WriteBlock(stdout, analysis.Header{Target: sum.Target, Pods: sum.Pods, Concurrency: sum.Concurrency, Repeat: sum.Repeat}, sum.Evaluation)
	}
	if progress != nil {
		io.WriteString(progress, "results: "+sum.Dir+"\n")
	}
	if err != nil && !errors.Is(err, suite.ErrInterrupted) {
		return err
	}
	return err
}
