package suite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/stacks"
)

// faulty is the local target with faults injected on cue: during the measured window of one
// scenario (onWindow), on admin reads (admin), or as a client that panics (panicFor).
type faulty struct {
	*local.Local
	window   time.Duration
	onWindow map[string]func(*emulator.Pool)
	admin    func(ctx context.Context, p gateway.Pod, path string) error
	panicFor string       // the client panics in this scenario's window
	bugIn    string       // igwlab itself panics while running this scenario
	current  atomic.Value // scenario name of the load in progress
}

func (f *faulty) Apply(ctx context.Context, sc stacks.Scenario) error {
	f.current.Store(sc.Name)
	if sc.Name == f.bugIn {
		panic("injected bug")
	}
	return f.Local.Apply(ctx, sc)
}

func (f *faulty) Load(ctx context.Context, spec load.Spec) (*load.Result, error) {
	name, _ := f.current.Load().(string)
	if spec.Duration == f.window { // the measured window, not the warm-up
		if name == f.panicFor {
			panic("injected client crash")
		}
		if inject := f.onWindow[name]; inject != nil {
			go inject(f.Pool)
		}
	}
	return f.Local.Load(ctx, spec)
}

func (f *faulty) Admin(ctx context.Context, p gateway.Pod, path string) ([]byte, error) {
	if f.admin != nil {
		if err := f.admin(ctx, p, path); err != nil {
			return nil, err
		}
	}
	return f.Local.Admin(ctx, p, path)
}

func newFaulty(t *testing.T, window time.Duration) *faulty {
	t.Helper()
	l, err := local.NewLocal(emulator.Config{Pods: 3, Workers: 2, WaypointPods: 0, WaypointWorkers: 1, Model: emulator.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &faulty{Local: l, window: window}
}

func runFaulty(t *testing.T, f *faulty, only ...string) (*Summary, string) {
	t.Helper()
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), Options{Target: f, Catalog: cat, Only: only, Duration: f.window,
		OutDir: out, ApplyTimeout: 5 * time.Second, AdminTimeout: 300 * time.Millisecond, NoReport: true})
	if err != nil {
		t.Fatal(err)
	}
	return sum, sum.Dir
}

// TestPodKilledAndWorkerStuckMidScenario kills the busiest gateway pod in the middle of
// 02-trigger's window, restarts it, and sticks a worker of another pod: the run completes, the
// scenario is marked disturbed with each fault and its time, the calls that use it say so,
// and the scenario before it is untouched.
func TestPodKilledAndWorkerStuckMidScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two scenarios on the local pool (about 15 s)")
	}
	f := newFaulty(t, 3*time.Second)
	f.onWindow = map[string]func(*emulator.Pool){"02-trigger": func(p *emulator.Pool) {
		time.Sleep(time.Second)
		busiest := 0
		for i, pod := range p.Pods() {
			if pod.OpenConnections() > p.Pods()[busiest].OpenConnections() {
				busiest = i
			}
		}
		if err := p.KillPod(busiest); err != nil {
			t.Error(err)
		}
		if err := p.StallWorker((busiest+1)%len(p.Pods()), 0, 200*time.Millisecond); err != nil {
			t.Error(err)
		}
		time.Sleep(500 * time.Millisecond)
		if err := p.RestartPod(busiest); err != nil {
			t.Error(err)
		}
	}}
	sum, dir := runFaulty(t, f, "01-baseline", "02-trigger")
	if !sum.Complete {
		t.Fatal("run did not complete")
	}
	if s1 := sum.Scenarios["01-baseline"]; s1.Status != "ok" || s1.Disturbed {
		t.Errorf("01-baseline: %s disturbed=%v %v", s1.Status, s1.Disturbed, s1.Faults)
	}
	s2 := sum.Scenarios["02-trigger"]
	if s2.Status != "ok" || !s2.Disturbed {
		t.Fatalf("02-trigger: %s (%s) disturbed=%v", s2.Status, s2.Reason, s2.Disturbed)
	}
	faults := strings.Join(s2.Faults, "\n")
	for _, want := range []string{"kill istio-ingressgateway", "restart istio-ingressgateway", "stall istio-ingressgateway", "worker 0 stuck for 200ms", "s into the scenario"} {
		if !strings.Contains(faults, want) {
			t.Errorf("faults do not mention %q:\n%s", want, faults)
		}
	}
	var ds []gateway.Disruption
	b, err := os.ReadFile(filepath.Join(dir, "02-trigger", "disruptions.json"))
	if err == nil {
		err = json.Unmarshal(b, &ds)
	}
	if err != nil || len(ds) != 3 || ds[0].Kind != "kill" || ds[0].Time.IsZero() {
		t.Errorf("disruptions.json: %v %+v", err, ds)
	}
	var flagged bool
	for _, v := range sum.Evaluation {
		for _, n := range v.Disturbed {
			flagged = flagged || n == "02-trigger"
		}
	}
	if !flagged {
		t.Error("no hypothesis call says it stands on the disturbed 02-trigger")
	}
}

// TestStatsEndpointHangsAndFails: a pod whose admin hangs once is read on the retry and the
// scenario says so; a pod whose admin never answers fails that scenario with the pod named,
// and the suite goes on to the next one.
func TestStatsEndpointHangsAndFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scenarios on the local pool (about 20 s)")
	}
	f := newFaulty(t, 2*time.Second)
	var hung atomic.Bool
	f.admin = func(ctx context.Context, p gateway.Pod, path string) error {
		name, _ := f.current.Load().(string)
		switch {
		case name == "01-baseline" && strings.HasSuffix(p.Name, f.Pods0()) && path == "/stats/prometheus" && hung.CompareAndSwap(false, true):
			<-ctx.Done() // hangs until the attempt times out
			return ctx.Err()
		case name == "02-trigger" && strings.HasSuffix(p.Name, f.Pods0()) && path == "/stats/prometheus":
			return os.ErrDeadlineExceeded
		}
		return nil
	}
	sum, _ := runFaulty(t, f, "01-baseline", "02-trigger", "04-mrpc")
	s1 := sum.Scenarios["01-baseline"]
	if s1.Status != "ok" || !strings.Contains(strings.Join(s1.Warnings, " "), "no answer within 300ms") {
		t.Errorf("01-baseline after one hung read: %s (%s), warnings %q", s1.Status, s1.Reason, s1.Warnings)
	}
	s2 := sum.Scenarios["02-trigger"]
	if s2.Status != "failed" || !strings.Contains(s2.Reason, f.Pods0()) || !strings.Contains(s2.Reason, "3 attempts failed") {
		t.Errorf("02-trigger with a dead stats endpoint: %s (%s)", s2.Status, s2.Reason)
	}
	if s4 := sum.Scenarios["04-mrpc"]; s4.Status != "ok" {
		t.Errorf("04-mrpc after the failure: %s (%s)", s4.Status, s4.Reason)
	}
}

// Pods0 is the name of the first gateway pod.
func (f *faulty) Pods0() string { return f.Pool.Pods()[0].Name }

// TestClientCrashIsReported: a client that panics fails its scenario with the crash and its
// stack kept; the suite runs the next scenario.
func TestClientCrashIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scenarios on the local pool (about 10 s)")
	}
	f := newFaulty(t, 2*time.Second)
	f.panicFor = "02-trigger"
	sum, dir := runFaulty(t, f, "02-trigger", "04-mrpc")
	s2 := sum.Scenarios["02-trigger"]
	if s2.Status != "failed" || !strings.Contains(s2.Reason, "client crashed: injected client crash") {
		t.Errorf("02-trigger: %s (%s)", s2.Status, s2.Reason)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "02-trigger", "client-crash.txt")); err != nil || !strings.Contains(string(b), "goroutine") {
		t.Errorf("client-crash.txt: %v %.200s", err, b)
	}
	if s4 := sum.Scenarios["04-mrpc"]; s4.Status != "ok" {
		t.Errorf("04-mrpc after the crash: %s (%s)", s4.Status, s4.Reason)
	}
}

// TestPanicInOneScenarioCostsOnlyThatScenario: a panic inside igwlab while a scenario runs fails
// that scenario, keeps the stack, and the run goes on and completes.
func TestPanicInOneScenarioCostsOnlyThatScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scenarios on the local pool (about 10 s)")
	}
	f := newFaulty(t, 2*time.Second)
	f.bugIn = "03-mcs-cap"
	sum, dir := runFaulty(t, f, "02-trigger", "03-mcs-cap", "04-mrpc")
	if !sum.Complete {
		t.Error("the run did not complete")
	}
	s3 := sum.Scenarios["03-mcs-cap"]
	if s3.Status != "failed" || !strings.Contains(s3.Reason, "injected bug") {
		t.Errorf("03-mcs-cap: %s (%s)", s3.Status, s3.Reason)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "03-mcs-cap", "panic.txt")); err != nil || !strings.Contains(string(b), "goroutine") {
		t.Errorf("panic.txt: %v", err)
	}
	for _, n := range []string{"02-trigger", "04-mrpc"} {
		if r := sum.Scenarios[n]; r.Status != "ok" {
			t.Errorf("%s: %s (%s)", n, r.Status, r.Reason)
		}
	}
}
