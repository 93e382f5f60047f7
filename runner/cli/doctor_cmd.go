package cli

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/cli/app"
	"github.com/igwlab/igwlab/runner/doctor"
)

// doctorCmd checks what the real lab needs before anything is created, and says how to fix
// each thing that is missing. Exit 1 when a check fails.
func doctorCmd(e *app.Env) *cobra.Command {
	var sf app.StackFlags
	c := app.Command("doctor", app.DoctorSummary,
		func(cmd *cobra.Command) error { return runDoctor(cmd.Context(), &sf, e.Stdout) })
	sf.Register(c.Flags())
	return c
}

// runDoctor reads the stack from its files (no Pulumi CLI, login or cluster needed; no stack
// created or changed) and reports every check. --kubeconfig and --context check that cluster
// as the stack's own (igwlab:cluster existing), so a cluster can be checked before its stack
// is set up.
func runDoctor(ctx context.Context, sf *app.StackFlags, stdout io.Writer) error {
	if err := sf.Check(); err != nil {
		return err
	}
	dir, err := infra.RepoRoot()
	if err != nil {
		return err
	}
	if sf.InlineDir != "" {
		dir = sf.InlineDir
	}
	st, err := doctor.ReadStack(dir, sf.Name)
	if err != nil {
		return err
	}
	if sf.Kubeconfig != "" || sf.Context != "" {
		st = st.OnCluster(sf.Kubeconfig, sf.Context)
	}
	r := doctor.Run(ctx, doctor.Options{Stack: st, Tools: doctor.Exec{}, PortBusy: doctor.PortBusy, Cluster: doctor.Connect, ProjectDir: dir})
	r.Write(stdout)
	if r.Failed() {
		return errors.New("the machine is not ready for the real lab: fix what is marked FAIL above")
	}
	return nil
}

// preflight is what `up` runs before it applies anything (a test puts its own in place).
var preflight = doctor.Preflight
