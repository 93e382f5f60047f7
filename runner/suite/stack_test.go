package suite

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// pulumiEnv is the environment of a real Pulumi CLI run against a local file backend.
func pulumiEnv(t *testing.T) map[string]string {
	t.Helper()
	bin := os.Getenv("IGWLAB_PULUMI_BIN")
	if bin == "" {
		t.Skip("set IGWLAB_PULUMI_BIN to the Pulumi tools folder (make test-pulumi does)")
	}
	tmp := t.TempDir()
	for _, d := range []string{"home", "state"} {
		_ = os.MkdirAll(filepath.Join(tmp, d), 0o755)
	}
	t.Setenv("KUBECONFIG", "") // render mode refuses a kubeconfig
	return map[string]string{
		"PATH":                     bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_HOME":              filepath.Join(tmp, "home"),
		"PULUMI_BACKEND_URL":       "file://" + filepath.Join(tmp, "state"),
		"PULUMI_CONFIG_PASSPHRASE": "",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
	}
}

// renderTarget is the local target driven through a real inline stack (Automation API, Pulumi
// CLI built here) that renders to a folder: no cluster, nothing fetched. Pulumi's progress is
// kept in the returned builder.
func renderTarget(t *testing.T, name string, pods int) (*cluster.StackLocal, *strings.Builder) {
	t.Helper()
	env := pulumiEnv(t)
	t.Setenv("PATH", env["PATH"]) // the Automation API finds the CLI on PATH
	ctx := context.Background()
	st, err := pulumistack.Open(ctx, pulumistack.Options{Name: name, Inline: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	render := t.TempDir()
	for k, v := range map[string]string{"cluster": "existing", "renderDir": render, "installUpstream": "false",
		"buildImages": "false", "monitoring": "false"} {
		if err := st.SetConfig(ctx, "igwlab:"+k, v, false); err != nil {
			t.Fatal(err)
		}
	}
	l, err := local.NewLocal(emulator.Config{Pods: pods, Workers: 1, WaypointPods: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	progress := &strings.Builder{}
	return &cluster.StackLocal{Local: l, Stack: st, RenderDir: render, Progress: progress}, progress
}

// TestAutomationAPIDrivesTheLocalTarget flips a real stack (Automation API, Pulumi CLI built
// here, file backend, Kubernetes provider in render mode) through three scenarios; at each flip
// the emulated pool takes its knobs from the EnvoyFilter the stack rendered, and the suite checks
// on every pod's /config_dump that the change reached it before measuring.
func TestAutomationAPIDrivesTheLocalTarget(t *testing.T) {
	ctx := context.Background()
	tgt, progress := renderTarget(t, "igwlab-flip-test", 3)
	render := tgt.RenderDir
	cat, _ := stacks.Builtin()
	sum, err := Run(ctx, Options{Target: tgt, Catalog: cat, Only: []string{"02-trigger", "03-mcs-cap", "04-fortio"},
		Duration: time.Second, OutDir: t.TempDir(), ApplyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	for _, n := range []string{"02-trigger", "03-mcs-cap", "04-fortio"} {
		if r := sum.Scenarios[n]; r.Status != "ok" {
			t.Errorf("%s: %s %s", n, r.Status, r.Reason)
		}
	}
	// The last flip's knobs, as the emulator has them, are the stack's (with 04-fortio's local limit).
	setup, err := cluster.ReadRendered(render)
	if err != nil {
		t.Fatal(err)
	}
	mrpc, _ := stacks.Lookup("hcm.common_http_protocol_options.max_requests_per_connection")
	s4, _ := cat.Get("04-fortio")
	local := s4.WithLocal()
	want, _ := mrpc.Get(&local.Knobs)
	if v, _ := mrpc.Get(&setup.Knobs); want == "" || v != want {
		t.Fatalf("rendered max_requests_per_connection %q, want the local run's %s", v, want)
	}
	if r := sum.Scenarios["04-fortio"]; r.MaxRequestsReached == 0 || r.ConnectionsTotal <= 2 {
		t.Errorf("the knob the stack rendered did not make the emulator rotate connections: max_requests_reached %v, %v connections", r.MaxRequestsReached, r.ConnectionsTotal)
	}
}

// cancelOnWrite cancels on its first write.
type cancelOnWrite context.CancelFunc

func (c cancelOnWrite) Write(b []byte) (int, error) {
	c()
	return len(b), nil
}

// TestInterruptedUpLeavesAConsistentStack stops a real `pulumi up` (Automation API, Pulumi CLI
// built here) as soon as it reports progress, as Ctrl-C does: the error says what state the stack was
// left in, read back from the stack's own state; the lock the interrupted update leaves on the
// file backend is released; and the next update goes through.
func TestInterruptedUpLeavesAConsistentStack(t *testing.T) {
	ctx := context.Background()
	tgt, progress := renderTarget(t, "igwlab-interrupt-test", 2)
	st := tgt.Stack
	cat, _ := stacks.Builtin()
	sc, _ := cat.MustGet("02-trigger")
	// Ctrl-C as soon as Pulumi reports the update has begun (with a bound, should it never say so).
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tgt.Progress = io.MultiWriter(progress, cancelOnWrite(cancel))
	err := tgt.Apply(cctx, sc.WithLocal())
	var up *gateway.InterruptedUpError
	if !errors.As(err, &up) {
		t.Fatalf("an up cancelled as it began returned %v, want an InterruptedUpError\n%s", err, progress.String())
	}
	t.Logf("after the interrupt: %s", up.State)
	if !strings.Contains(up.State, "consistent") && !strings.Contains(up.State, "--clear-pending-creates") {
		t.Errorf("state %q says neither consistent nor what to clear", up.State)
	}
	if !strings.Contains(up.State, "released the interrupted update's lock") {
		t.Errorf("state %q does not say the update's lock was released", up.State)
	}
	if !strings.Contains(progress.String(), "stack igwlab-interrupt-test: ") {
		t.Errorf("the state was not told on progress:\n%s", progress.String())
	}
	if pending, _ := st.PendingOperations(ctx); len(pending) > 0 {
		t.Logf("left pending: %v", pending) // the CLI had to be killed; the message said how to clear it
		return
	}
	if err := tgt.Apply(ctx, sc.WithLocal()); err != nil {
		t.Fatalf("the next up after the interrupt: %v\n%s", err, progress.String())
	}
}
