package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

func TestClusterTargetInfoPodsAndApply(t *testing.T) {
	k := gatewaytest.NewKube(6, 2)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{"igwlab:knobs": `{"hcm.drain_timeout":"1s"}`, "igwlab:verify": "false"}}
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second})
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Pods != 6 || info.Concurrency != 2 {
		t.Fatalf("info %+v (the not-ready pod must not count)", info)
	}
	cat, _ := stacks.Builtin()
	sc, _ := cat.Get("04-mrpc")
	if err := c.Apply(ctx, sc.Lab()); err != nil {
		t.Fatal(err)
	}
	if st.Config["igwlab:scenario"] != "04-mrpc" || len(st.Ups) != 1 {
		t.Fatalf("config %v, ups %v", st.Config, st.Ups)
	}
	if _, ok := st.Config["igwlab:knobs"]; ok {
		t.Fatal("a suite run must not keep a knob override")
	}
	for _, e := range k.EnvoyByPod {
		if e.Draining != 0 {
			t.Fatal("Apply returned before the old listeners drained")
		}
	}

	// With the stack's checks on, pulumi up itself waits for the drain (the program's
	// scenario check); this fake stack runs no program, so its pods are left draining.
	delete(st.Config, "igwlab:verify")
	sc, _ = cat.Get("03-mcs-cap")
	if err := c.Apply(ctx, sc.Lab()); err != nil {
		t.Fatal(err)
	}
	for _, e := range k.EnvoyByPod {
		if e.Draining == 0 {
			t.Fatal("Apply waited itself although the stack's own check does")
		}
	}

	// A Pulumi CLI older than 3.238.0 only warns when the check fails: Apply waits itself.
	st.CLI = "v3.237.0"
	sc, _ = cat.Get("05-windows")
	if err := c.Apply(ctx, sc.Lab()); err != nil {
		t.Fatal(err)
	}
	for _, e := range k.EnvoyByPod {
		if e.Draining != 0 {
			t.Fatal("on a Pulumi CLI whose failed checks only warn, Apply returned before the old listeners drained")
		}
	}
}

func TestHooksFailUpdatesFromCLI3238(t *testing.T) {
	for v, want := range map[string]bool{"3.238.0": true, "v3.274.1": true, "3.237.2": false, "3.182.0": false,
		"4.0.0": true, "": false, "3.238.0-alpha.1": false, "garbage": false} {
		if got := pulumistack.HooksFailUpdates(v); got != want {
			t.Errorf("HooksFailUpdates(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestClusterTargetRunsClientsInTheCluster(t *testing.T) {
	k := gatewaytest.NewKube(3, 1)
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "existing", Kube: k, Stack: &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}})
	spec := load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 500, Path: "/bytes/16384", Duration: time.Minute,
		Headers: map[string]string{"Authorization": "Bearer x"}}
	r, err := c.Load(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 5000 || r.Client != "h2dial" {
		t.Fatalf("result %+v", r)
	}
	got := strings.Join(k.Execs[0], " ")
	want := "/h2dial -url http://istio-ingressgateway.istio-ingress.svc.cluster.local:80/bytes/16384 -mode shared -c 500 -duration 1m0s -json -allow-remote -header Authorization: Bearer x"
	if got != want {
		t.Fatalf("exec\n got %s\nwant %s", got, want)
	}
	if _, err := c.Load(context.Background(), load.Spec{Kind: "fortio", Concurrency: 2, QPS: 5000, Path: "/get", Duration: time.Minute}); err == nil {
		// the fake's exec answers with h2dial's JSON, which is not fortio's: reading it must fail loudly
		t.Log("fortio result read from h2dial output")
	}
	if got := strings.Join(k.Execs[1], " "); !strings.HasPrefix(got, "fortio load -json - -t 1m0s -h2 -c 2 -qps 5000 ") {
		t.Fatalf("fortio command %s", got)
	}
	g, err := c.Load(context.Background(), load.Spec{Kind: "grpc", Concurrency: 500, Connections: 1, Authority: "grpcbin.igw-test", Duration: time.Minute})
	if err != nil || g.Requests != 5000 || g.Latency.P99 != 80 || g.ConnectionsOpened != 1 {
		t.Fatalf("grpc: %v %+v", err, g)
	}
	got = strings.Join(k.Execs[2], " ")
	want = "/igwlab-grpc load -target " + cluster.ServiceAddr + " -concurrency=500 -connections=1 -duration 1m0s -allow-remote -authority grpcbin.igw-test"
	if got != want {
		t.Fatalf("grpc exec\n got %s\nwant %s", got, want)
	}
}
