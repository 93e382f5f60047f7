package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// upInterrupted checks a stack whose update was cancelled. The Automation API stops the CLI
// with SIGINT, which lets Pulumi finish the operations in flight and save the state; one that
// had to be killed leaves pending operations, which the next update refuses until cleared.
// The answer goes to progress too, because the user is about to walk away from this stack.
func upInterrupted(st pulumistack.Stack, scenario string, err error, progress io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var state string
	pending, perr := st.PendingOperations(ctx)
	switch {
	case perr != nil:
		state = fmt.Sprintf("could not read the stack's state to check it (%v); `pulumi stack export -s %s` shows it", perr, st.Name())
	case len(pending) == 0:
		state = fmt.Sprintf("Pulumi stopped cleanly and the stack is consistent (no operation left pending); "+
			"its config may already name %s, which may be only partly applied: `pulumi preview -s %s --diff` shows what is left and `pulumi up -s %s` finishes it",
			scenario, st.Name(), st.Name())
	default:
		state = fmt.Sprintf("%d operation(s) were still in flight when Pulumi stopped (%s); "+
			"run `pulumi refresh -s %s --clear-pending-creates` before the next update",
			len(pending), strings.Join(pending, ", "), st.Name())
	}
	// An interrupted update keeps its lock on a self-managed (file or bucket) backend, and the
	// next `pulumi up` then fails with "another update is in progress". The update was ours and
	// it has stopped, so its lock is released here.
	if cerr := st.Cancel(ctx); cerr != nil {
		state += fmt.Sprintf("; the interrupted update's lock may remain (%v): `pulumi cancel -s %s` releases it", cerr, st.Name())
	} else {
		state += "; igwlab released the interrupted update's lock on the stack (pulumi cancel), so the next update can run"
	}
	if progress != nil {
		fmt.Fprintf(progress, "stack %s: %s\n", st.Name(), state)
	}
	return &gateway.InterruptedUpError{Scenario: scenario, State: state, Err: err}
}
