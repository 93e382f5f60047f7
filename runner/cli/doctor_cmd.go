package cli

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/cli/app"
	"github.com/igwlab/igwlab/runner/doctor"
	"github.com/igwlab/igwlab/runner/pulumistack"
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

func runDoctor(ctx context.Context, sf *app.StackFlags, stdout io.Writer) error {
	if err := sf.Check(); err != nil {
		return err
	}
	st, _, err := pulumistack.OpenFor(ctx, stackOptions(sf), "")
	if err != nil {
		return err
	}
	r, err := doctor.ForStack(ctx, st)
	if err != nil {
		return err
	}
	r.Write(stdout)
	if r.Failed() {
		return errors.New("the machine is not ready for the real lab: fix what is marked FAIL above")
	}
	return nil
}

// preflight is what `up` runs before it applies anything (a test puts its own in place).
var preflight = doctor.Preflight
