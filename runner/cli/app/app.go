// Package app is igwlab's command tree: every command, GNU-style flags (the README's
// single-dash -q and -json still work), `igwlab help <command>` and shell completion. The
// local lab's commands run here; the real lab's come from package cli, linked only into
// igwlab-lab, and a binary without them hands those command lines to igwlab-lab, as git and
// kubectl hand theirs to plugins. Data goes to stdout, progress to stderr.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// UsageError is a bad command line: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// ExitError carries the exit code of a program igwlab ran in its place (igwlab-lab), which
// has already said what went wrong.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Lab adds the real lab's commands and targets; nil in a binary without them.
type Lab interface {
	// Commands are the real lab's commands (up, preview, kubeconfig).
	Commands(e *Env) []*cobra.Command
	// DiagnoseSource reads a gateway pool's Envoy admins through Kubernetes; an error is a bad
	// option.
	DiagnoseSource(o diagnose.KubeOptions) (diagnose.Source, error)
}

// Env is what every command shares: its output streams and what this binary holds.
type Env struct {
	Stdout, Stderr io.Writer
	// Lab is the real lab's part, nil when this binary hands it to igwlab-lab.
	Lab Lab
	// Args is the whole command line, for handing it on.
	Args []string
}

// Main runs a command line and returns the process exit code: 0 done, 1 failed, 2 bad usage,
// 130 interrupted (results kept).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, lab Lab) int {
	err := Run(ctx, args, stdout, stderr, lab)
	var exit ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
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

// Run runs a command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, lab Lab) error {
	e := &Env{Stdout: stdout, Stderr: stderr, Lab: lab, Args: args}
	root := e.Root()
	root.SetArgs(Normalize(root, args))
	return root.ExecuteContext(ctx)
}

// Root builds the command tree.
func (e *Env) Root() *cobra.Command {
	root := &cobra.Command{
		Use:           "igwlab",
		Short:         "reproduce and measure Istio ingress gateway thread concentration",
		Example:       examples(),
		SilenceErrors: true, SilenceUsage: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown command %q (commands: %s)", args[0], strings.Join(commandNames(cmd), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(e.Stdout)
	root.SetErr(e.Stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(e.suiteCmd(), e.sweepCmd(), e.capacityCmd(), e.serveCmd(), e.scenariosCmd(), e.knobsCmd(), e.reportCmd(), e.compareCmd(), e.diagnoseCmd(), e.predictCmd())
	if e.Lab != nil {
		root.AddCommand(e.Lab.Commands(e)...)
	} else {
		for _, c := range labCommands {
			root.AddCommand(e.handOn(c.name, c.summary))
		}
	}
	return root
}

// examples shows command lines with scenarios of the built-in catalog, by the roles they play.
func examples() string {
	f := stacks.Feeds{}
	if cat, err := stacks.Builtin(); err == nil {
		f = cat.Feeds()
	}
	return fmt.Sprintf(`  igwlab suite                                   the whole suite on the local emulated pool
  igwlab suite --only %s,%s --repeat 3
  igwlab suite --concurrency 2                   includes %s and its control
  igwlab serve --scenario %s             then point h2load/curl/your client at the printed URL`,
		f.Scenario("H-A", "trigger"), f.Scenario("H-C h2dial", "rotated"), f.Scenario("H-E", "balanced"), f.Scenario("H-B h2dial", "capped"))
}

// labCommands are the real lab's commands, for a binary that hands them to igwlab-lab.
var labCommands = []struct{ name, summary string }{
	{"preview", "show what switching the lab stack to a scenario (or a knob) would change (pulumi preview --diff)"},
	{"up", "switch the lab stack to a scenario (or a knob override) and apply it"},
	{"kubeconfig", "merge the lab cluster's kubeconfig into ~/.kube/config (or --out FILE) for kubectl; prints the context, never the key"},
	{"doctor", DoctorSummary},
}

// DoctorSummary is igwlab doctor's one-line help.
const DoctorSummary = "check the machine (Docker's CPUs and memory, k3d, the Pulumi CLI, kubectl, free ports) or your cluster against what the real lab needs, with the fix for each problem"

func commandNames(root *cobra.Command) []string {
	var out []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, c.Name())
		}
	}
	slices.Sort(out)
	return out
}

// Command makes a subcommand whose flags are bound by flags and whose run takes no
// positional argument.
func Command(use, short string, run func(cmd *cobra.Command) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, SilenceErrors: true, SilenceUsage: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unexpected argument %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd) }}
}

// flagError makes a flag the command line got wrong a usage error that says what the flag
// takes: pflag's own message names the flag and the value, its help line the allowed range.
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return UsageError{fmt.Errorf("%w (--%s: %s)", err, bad.GetFlag().Name, bad.GetFlag().Usage)}
	}
	var missing *pflag.NotExistError
	if errors.As(err, &missing) {
		// The wording of Go's flag package, which igwlab's command line has always used.
		return UsageError{fmt.Errorf("flag provided but not defined: %s", strings.TrimPrefix(missing.Error(), "unknown flag: "))}
	}
	return UsageError{err}
}

// Normalize rewrites single-dash long flags (-json, -pods 3, -q=false) as GNU-style ones
// (--json), for every flag some command defines: the README and scripts written for Go's flag
// package keep working. A value that only looks like a flag (-5s) is left alone, and so is
// everything after "--".
func Normalize(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	long["help"] = true // cobra adds it as the command runs
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// stdin is what a program igwlab runs in its place reads (a test may replace it).
var stdin io.Reader = os.Stdin
