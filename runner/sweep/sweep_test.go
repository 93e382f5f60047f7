package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

const mrpc = "hcm.common_http_protocol_options.max_requests_per_connection"

// TestSweepOnTheRealLabFlipsTheStack: on a real lab (a fake one: Envoy admins with Istio's
// naming behind a Pulumi stack), each value is a stack-config flip (the scenario, and the
// value as igwlab:knobs), in force on every pod before its run, through the suite's code path.
func TestSweepOnTheRealLabFlipsTheStack(t *testing.T) {
	k := gatewaytest.NewKube(6, 1)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}
	var flips []string
	c := &gatewaytest.AfterApply{Cluster: cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second}),
		After: func() { flips = append(flips, st.Config[configkey.Full(configkey.Knobs)]) }}
	spec, _ := stacks.Lookup(mrpc)
	sw, err := Run(context.Background(), Options{Target: c, Scenario: testutil.Scenario(t, "04-mrpc"), Knob: spec, Values: []string{"100", "1000"},
		Duration: time.Second, RunSettings: suite.RunSettings{OutDir: t.TempDir(), ApplyTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"` + mrpc + `":"100"}`, `{"` + mrpc + `":"1000"}`}
	if strings.Join(flips, " ") != strings.Join(want, " ") || len(st.Ups) != 2 || st.Ups[0] != "04-mrpc" {
		t.Fatalf("stack flips %q (ups %v), want %q", flips, st.Ups, want)
	}
	for _, p := range sw.Points {
		if p.Status != analysis.StatusOK || p.Connections != 1 {
			t.Errorf("value %s: %s %s, %v connections", p.Value, p.Status, p.Reason, p.Connections)
		}
		for _, f := range []string{"result.json", "scenario.yaml", "stats_post", "config_dump"} {
			if _, err := os.Stat(filepath.Join(sw.Dir, p.Dir, f)); err != nil {
				t.Errorf("value %s: %v", p.Value, err)
			}
		}
	}
	var saved Sweep
	b, err := os.ReadFile(filepath.Join(sw.Dir, "sweep.json"))
	if err != nil || json.Unmarshal(b, &saved) != nil || !saved.Complete || len(saved.Points) != 2 || saved.Recommendation == nil {
		t.Fatalf("sweep.json: %v %s", err, b)
	}
	// One connection on one pod of six is not a well-spread client at any value.
	if saved.Recommendation.Value != "" || !strings.Contains(saved.Recommendation.Why, "no value") {
		t.Errorf("recommendation %+v", saved.Recommendation)
	}
	if _, err := os.Stat(filepath.Join(sw.Dir, "report.html")); err != nil {
		t.Error(err)
	}
}

// TestInterruptedSweepKeepsWhatFinished: a sweep stopped by its context keeps the values that
// finished and marks the rest in sweep.json.
func TestInterruptedSweepKeepsWhatFinished(t *testing.T) {
	k := gatewaytest.NewKube(3, 1)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	c := &gatewaytest.AfterApply{Cluster: cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second}),
		After: func() {
			if len(st.Ups) == 2 {
				cancel() // Ctrl-C while the second value is being put in force
			}
		}}
	spec, _ := stacks.Lookup(mrpc)
	sw, err := Run(ctx, Options{Target: c, Scenario: testutil.Scenario(t, "04-mrpc"), Knob: spec, Values: []string{"100", "1000", "10000"},
		Duration: time.Second, RunSettings: suite.RunSettings{OutDir: t.TempDir(), ApplyTimeout: 5 * time.Second, NoReport: true}})
	if !errors.Is(err, ErrInterrupted) || sw == nil || !sw.Interrupted || sw.Complete {
		t.Fatalf("err %v, sweep %+v", err, sw)
	}
	var saved Sweep
	b, _ := os.ReadFile(filepath.Join(sw.Dir, "sweep.json"))
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, p := range saved.Points {
		got = append(got, string(p.Status))
	}
	if strings.Join(got, " ") != "ok interrupted not-run" || !saved.Interrupted || !strings.Contains(saved.Points[2].Reason, "interrupted before this value") {
		t.Fatalf("statuses %v; sweep.json %s", got, b)
	}
	if _, err := os.Stat(filepath.Join(sw.Dir, saved.Points[0].Dir, "result.json")); err != nil {
		t.Errorf("the finished value's folder: %v", err)
	}
}

// TestSweepTrendsOnTheLocalPool is the acceptance sweep on the emulated pool: as the rotation
// count falls, the spread across pods improves and the drains rise. Loose on purpose (a shared
// machine makes rates noisy): only the ends are compared.
func TestSweepTrendsOnTheLocalPool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local pool for about a minute")
	}
	l, err := local.NewLocal(emulator.Config{Pods: 6, Workers: 1, ListenerDrainTime: local.LocalDrainTime})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	spec, _ := stacks.Lookup(mrpc)
	sw, err := Run(context.Background(), Options{Target: l, Scenario: testutil.Scenario(t, "04-fortio"), Knob: spec,
		Values: []string{"30", "300", "3000"}, RunSettings: suite.RunSettings{OutDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := sw.Points[0], sw.Points[2]
	if lo.Status != analysis.StatusOK || hi.Status != analysis.StatusOK {
		t.Fatalf("30: %s %s; 3000: %s %s", lo.Status, lo.Reason, hi.Status, hi.Reason)
	}
	if !(lo.CV < hi.CV) || !(lo.DrainsPerS > hi.DrainsPerS) {
		t.Errorf("CV %.3f at 30 vs %.3f at 3000 (want lower); drains/s %.2f vs %.2f (want higher)", lo.CV, hi.CV, lo.DrainsPerS, hi.DrainsPerS)
	}
	if r := sw.Recommendation; r == nil || r.Value == "" || r.Value == "3000" || r.EnvoyFilter == "" || !strings.Contains(r.Preview, "--set "+mrpc+"="+r.Value) {
		var pts []string
		for _, p := range sw.Points {
			pts = append(pts, fmt.Sprintf("%s: CV %.3f (k=%v), drains/s %.2f", p.Value, p.CV, p.Connections, p.DrainsPerS))
		}
		t.Errorf("recommendation %+v; the points: %s", r, strings.Join(pts, "; "))
	} else if !strings.Contains(r.EnvoyFilter, "igwlab.dev/scenario: sweep") || !strings.Contains(r.EnvoyFilter, "max_requests_per_connection: "+r.Value) {
		t.Errorf("the recommended EnvoyFilter is not labelled as the sweep's or does not set the value:\n%s", r.EnvoyFilter)
	}
}
