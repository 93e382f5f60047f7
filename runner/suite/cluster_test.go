package suite

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/runner/target/targettest"
	"github.com/igwlab/igwlab/stacks"
)

// TestSuiteOnClusterTarget runs the suite's one code path against a fake real lab: scenarios are
// switched through the stack, stats read from Envoy admins with Istio's naming, the load run in
// the loadgen namespace; the analysis and results are the local target's.
func TestSuiteOnClusterTarget(t *testing.T) {
	for _, workers := range []int{1, 2} {
		k := targettest.NewKube(6, workers)
		st := &targettest.Stack{KubeRef: k, Config: map[string]string{}}
		c := target.NewCluster(target.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second})
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
