// Package cli is igwlab's command line: a thin shell over the suite, the emulator and the
// catalog. Data goes to stdout, progress to stderr.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/igwlab/igwlab/runner/suite"
)

// UsageError is a bad command line: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"suite":     {"run scenarios against a target and print the hypothesis evaluation", runSuite},
	"serve":     {"keep the local gateway pool up for your own client; report what it did on Ctrl-C", runServe},
	"scenarios": {"list the scenario catalog", runScenarios},
	"knobs":     {"list the gateway knobs scenarios may set, with Envoy's ranges and defaults", runKnobs},
	"preview":   {"show what switching the lab stack to a scenario (or a knob) would change (pulumi preview --diff)", runPreview},
	"up":        {"switch the lab stack to a scenario (or a knob override) and apply it", runUp},
	"kubeconfig": {"merge the k3d lab's kubeconfig into ~/.kube/config (or --out FILE) for kubectl; prints the context, never the key",
		runKubeconfig},
	"report":   {"draw a results folder's plots and write its report.html again", runReport},
	"diagnose": {"read-only: is a live gateway pool concentrating load, and which lever fits its clients (from Prometheus or Envoy admins)", runDiagnose},
	"compare":  {"show two results folders side by side", runCompare},
}

// Main runs a command line and returns the process exit code: 0 done, 1 failed, 2 bad usage,
// 130 interrupted (results kept).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := Run(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, suite.ErrInterrupted):
		fmt.Fprintln(stderr, "igwlab:", err)
		return 130
	}
	fmt.Fprintln(stderr, "igwlab:", err)
	var u UsageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Run dispatches to a subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usagef("unknown command %q (commands: %s)", args[0], strings.Join(names(), ", "))
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func names() []string {
	out := slices.Sorted(maps.Keys(commands))
	return out
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "igwlab: reproduce and measure Istio ingress gateway thread concentration")
	fmt.Fprintln(w, "\nusage: igwlab <command> [flags]   (igwlab <command> -h for its flags)")
	for _, n := range names() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, `
examples:
  igwlab suite                                   the whole suite on the local emulated pool
  igwlab suite --only 02-trigger,04-mrpc --repeat 3
  igwlab suite --concurrency 2                   includes 13-conn-balance and its control
  igwlab serve --scenario 03-mcs-cap             then point h2load/curl/your client at the printed URL`)
}

// newFlags makes a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("igwlab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return UsageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
