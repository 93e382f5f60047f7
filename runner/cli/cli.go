// Package cli is igwlab-lab's command line: igwlab's command tree (runner/cli/app) with the
// real lab's commands (up, preview, kubeconfig) and targets (runner/gateway/cluster) linked in.
// It links the Pulumi and Kubernetes SDKs, which the local lab's igwlab does without.
package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/cli/app"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/diagnose/kubesource"
	_ "github.com/igwlab/igwlab/runner/gateway/cluster" // the real lab's targets
)

// Main runs a command line and returns the process exit code: 0 done, 1 failed, 2 bad usage,
// 130 interrupted (results kept).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return app.Main(ctx, args, stdout, stderr, lab{})
}

// Run runs a command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return app.Run(ctx, args, stdout, stderr, lab{})
}

// Tree is igwlab-lab's whole command tree, the local lab's commands and the real lab's: what
// the command reference is generated from and the docs' command lines are checked against.
func Tree(stdout, stderr io.Writer) *cobra.Command {
	return (&app.Env{Stdout: stdout, Stderr: stderr, Lab: lab{}}).Root()
}

// lab is the real lab's part of the command tree.
type lab struct{}

func (lab) Commands(e *app.Env) []*cobra.Command {
	return []*cobra.Command{flipCmd(e, "preview", "show what switching the lab stack to a scenario (or a knob) would change (pulumi preview --diff)"),
		flipCmd(e, "up", "switch the lab stack to a scenario (or a knob override) and apply it"),
		kubeconfigCmd(e), doctorCmd(e)}
}

func (lab) DiagnoseSource(o diagnose.KubeOptions) (diagnose.Source, error) {
	if err := kubesource.Check(o); err != nil {
		return nil, err
	}
	return kubesource.Kube{KubeOptions: o}, nil
}
