package suite

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/stacks"
)

// TestSuiteOnClusterTarget runs the suite's one code path against a fake real lab: scenarios are
// switched through the stack, stats read from Envoy admins with Istio's naming, the load run in
// the loadgen namespace; the analysis and results are the local target's.
func TestSuiteOnClusterTarget(t *testing.T) {
	for _, workers := range []int{1, 2} {
		k := gatewaytest.NewKube(6, workers)
		st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}
		c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second})
		cat, _ := stacks.Builtin()
		sum, err := Run(context.Background(), Options{Target: c, Catalog: cat, Only: []string{"02-trigger", "13-conn-balance"},
			Duration: time.Second, OutDir: t.TempDir(), ApplyTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s2 := sum.Scenarios["02-trigger"]
		if s2.Status != "ok" || s2.ConnectionsTotal != 1 || math.Abs(s2.CV-math.Sqrt(5)) > 1e-9 {
			t.Fatalf("workers=%d: 02-trigger %+v", workers, s2)
		}
		if sum.Names.HCMPrefix != "outbound_0.0.0.0_80" || sum.Names.Cluster != "outbound|8080||httpbin.igw-test.svc.cluster.local" {
			t.Fatalf("names discovered %+v", sum.Names)
		}
		s13 := sum.Scenarios["13-conn-balance"]
		switch workers {
		case 1:
			if s13.Status != "skipped" || len(st.Ups) != 1 {
				t.Fatalf("13 at concurrency 1: %s (%s); ups %v", s13.Status, s13.Reason, st.Ups)
			}
		case 2:
			if s13.Status != "ok" || len(st.Ups) != 3 || st.Ups[1] != "13-conn-balance-control" {
				t.Fatalf("13 at concurrency 2: %s; ups %v", s13.Status, st.Ups)
			}
		}
	}
}

// TestCtrlCDuringStackUpdate: a Ctrl-C while `pulumi up` switches a scenario on the real lab
// ends the run as interrupted, and the scenario's reason and the progress say what state the
// stack is in and what to run next, for both a clean stop and one that left operations pending.
func TestCtrlCDuringStackUpdate(t *testing.T) {
	for _, tc := range []struct {
		pending []string
		want    string
	}{
		{nil, "stack is consistent"},
		{[]string{"creating urn:pulumi:lab::igwlab::kubernetes:networking.istio.io/v1alpha3:EnvoyFilter::igwlab-scenario"}, "pulumi refresh -s lab --clear-pending-creates"},
	} {
		k := gatewaytest.NewKube(3, 1)
		st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}, BlockUp: true, Pending: tc.pending}
		var progress strings.Builder
		c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: time.Second, Progress: &progress})
		cat, _ := stacks.Builtin()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		sum, err := Run(ctx, Options{Target: c, Catalog: cat, Only: []string{"02-trigger", "04-mrpc"},
			Duration: time.Second, OutDir: t.TempDir(), NoReport: true})
		cancel()
		if !errors.Is(err, ErrInterrupted) || !sum.Interrupted {
			t.Fatalf("err %v interrupted %v", err, sum != nil && sum.Interrupted)
		}
		s2, s4 := sum.Scenarios["02-trigger"], sum.Scenarios["04-mrpc"]
		if s2.Status != "interrupted" || !strings.Contains(s2.Reason, tc.want) {
			t.Errorf("02-trigger: %s (%s), want the reason to say %q", s2.Status, s2.Reason, tc.want)
		}
		if s4.Status != "not-run" {
			t.Errorf("04-mrpc: %s", s4.Status)
		}
		if !strings.Contains(progress.String(), tc.want) {
			t.Errorf("progress does not say %q:\n%s", tc.want, progress.String())
		}
	}
}
