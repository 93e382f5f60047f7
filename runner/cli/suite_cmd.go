package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/stacks"
)

// suiteArgs are the suite command's settings, parsed from the command line or, for --resume,
// from the command line the interrupted run recorded.
type suiteArgs struct {
	fs                       *flag.FlagSet
	only, skip               listFlag
	pf                       poolFlags
	sf                       stackFlags
	targetName, out, catalog *string
	resume                   *string
	skipEval, quiet, asJSON  *bool
	duration                 *time.Duration
	repeat                   *int
}

func newSuiteArgs(stderr io.Writer) *suiteArgs {
	a := &suiteArgs{fs: newFlags("suite", stderr)}
	fs := a.fs
	a.targetName = fs.String("target", stacks.TargetLocal, "where to run: local (emulated pool on loopback), k3d (the Pulumi lab stack), existing (the stack on your cluster)")
	fs.Var(&a.only, "only", "run only these scenarios (comma-separated); a scenario's control comes along")
	fs.Var(&a.skip, "skip", "skip these scenarios (comma-separated)")
	a.skipEval = fs.Bool("skip-eval", false, "do not print the hypothesis evaluation")
	a.duration = fs.Duration("duration", 0, "measured window per scenario, overriding the catalog (1s..24h; 0 keeps the catalog's)")
	a.repeat = fs.Int("repeat", 1, "runs per scenario (1..100); verdicts report median, spread and agreement")
	a.out = fs.String("out", "results", "results root; each run writes <out>/<UTC timestamp>/")
	a.catalog = fs.String("catalog", "", "also load the scenario files in this folder")
	a.quiet = fs.Bool("q", false, "no progress on stderr")
	a.asJSON = fs.Bool("json", false, "print summary.json to stdout instead of the evaluation block")
	a.resume = fs.String("resume", "", "continue the interrupted run in this results folder, with its settings: finished scenarios are kept, the rest run")
	a.pf.register(fs)
	a.sf.register(fs)
	return a
}

// resumeArgs swaps in the settings an interrupted run recorded. Only -q and -json may be given
// beside --resume: any other setting would make the resumed run a different run.
func resumeArgs(a *suiteArgs, stderr io.Writer) (*suiteArgs, *suite.Summary, error) {
	var extra []string
	a.fs.Visit(func(f *flag.Flag) {
		if f.Name != "resume" && f.Name != "q" && f.Name != "json" {
			extra = append(extra, "--"+f.Name)
		}
	})
	if len(extra) > 0 {
		return nil, nil, usagef("--resume continues a run with the settings it recorded; drop %s", strings.Join(extra, ", "))
	}
	prev, err := suite.LoadResume(*a.resume)
	if err != nil {
		return nil, nil, err
	}
	b := newSuiteArgs(io.Discard)
	if err := parse(b.fs, prev.Command[1:]); err != nil {
		return nil, nil, fmt.Errorf("%s: the recorded command line %q: %w", *a.resume, strings.Join(prev.Command, " "), err)
	}
	b.fs.SetOutput(stderr)
	*b.quiet, *b.asJSON = *a.quiet, *a.asJSON
	*b.resume = *a.resume
	return b, prev, nil
}

func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := newSuiteArgs(stderr)
	if err := parse(a.fs, args); err != nil {
		return err
	}
	var prev *suite.Summary
	command := append([]string{"suite"}, args...)
	if *a.resume != "" {
		var err error
		if a, prev, err = resumeArgs(a, stderr); err != nil {
			return err
		}
		command = prev.Command
	}
	if d := *a.duration; d != 0 && (d < time.Second || d > 24*time.Hour) {
		return usagef("--duration %s: allowed 1s..24h", d)
	}
	if *a.repeat < 1 || *a.repeat > 100 {
		return usagef("--repeat %d: allowed 1..100", *a.repeat)
	}
	cat, err := loadCatalog(*a.catalog)
	if err != nil {
		return err
	}
	if _, err := cat.Select(a.only, a.skip); err != nil {
		return UsageError{err}
	}
	t, err := a.target(ctx, stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	var progress io.Writer = stderr
	if *a.quiet {
		progress = nil
	}
	sum, err := suite.Run(ctx, suite.Options{Target: t, TargetName: *a.targetName, Catalog: cat, Only: a.only, Skip: a.skip,
		SkipEval: *a.skipEval, Duration: *a.duration, Repeat: *a.repeat, OutDir: *a.out, Progress: progress,
		RunDir: *a.resume, Resume: prev, Command: command,
		ProgressTTY: progress != nil && isTerminal(stderr), ProgressWidth: termWidth(stderr)})
	if sum == nil {
		return err
	}
	if *a.asJSON {
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
	if errors.Is(err, suite.ErrInterrupted) {
		// Said even with -q: it is how the user gets the rest of the run.
		return fmt.Errorf("%w: finished scenarios are saved in %s and summary.json marks the rest as not run; to run the rest: igwlab suite --resume %s",
			err, sum.Dir, sum.Dir)
	}
	return err
}

// target starts the local pool or opens the lab's stack, as --target says.
func (a *suiteArgs) target(ctx context.Context, stderr io.Writer) (target.Target, error) {
	switch *a.targetName {
	case stacks.TargetLocal:
		cfg, err := a.pf.config()
		if err != nil {
			return nil, err
		}
		l, err := target.NewLocal(cfg)
		if err != nil {
			return nil, err
		}
		return l, nil
	case "k3d", "existing":
		var pulumiOut io.Writer = stderr
		if *a.quiet {
			pulumiOut = nil
		}
		return clusterTarget(ctx, *a.targetName, &a.sf, pulumiOut)
	}
	return nil, usagef("--target %q: allowed local, k3d, existing", *a.targetName)
}
