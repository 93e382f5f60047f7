package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

// LabBinary is the program that holds the real lab's commands and targets. It links the
// Pulumi and Kubernetes SDKs, which the local lab does not need; igwlab finds it next to itself
// or on PATH and hands it the command line, as git and kubectl do with their plugins.
const LabBinary = "igwlab-lab"

// handOn is a real-lab command in a binary without the real lab: it hands its command line on.
func (e *Env) handOn(name, summary string) *cobra.Command {
	return &cobra.Command{Use: name, Short: summary + " (runs " + LabBinary + ")", DisableFlagParsing: true,
		SilenceErrors: true, SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.HandOn(cmd.Context(), "igwlab "+name) }}
}

// HandOn runs igwlab-lab with this command line, its output going where igwlab's goes, and
// returns its exit code as an ExitError. what names what needs it, for the message when it is
// missing.
func (e *Env) HandOn(ctx context.Context, what string) error {
	path, err := findLab()
	if err != nil {
		return fmt.Errorf("%s drives the real lab, which is in %s, not built here: `make build` builds it next to igwlab (bin/%s), or `go build -o bin/%s ./runner/cmd/%s`; then run this again",
			what, LabBinary, LabBinary, LabBinary, LabBinary)
	}
	cmd := exec.CommandContext(ctx, path, e.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, e.Stdout, e.Stderr
	// Ctrl-C reaches igwlab-lab from the terminal too; when only igwlab is told to stop, it
	// passes the interrupt on, so the run ends as it would have by itself (results kept).
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return ExitError{Code: max(1, exit.ExitCode())} // -1: killed by a signal
	}
	return err
}

// findLab looks for igwlab-lab next to this executable, then on PATH.
func findLab() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), LabBinary)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(LabBinary)
}
