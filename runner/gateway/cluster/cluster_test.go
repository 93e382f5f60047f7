package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/load"
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
	if err != nil || g.Requests != 100 || g.Latency.P99 != 5 {
		t.Fatalf("ghz: %v %+v", err, g)
	}
	args := strings.Join(k.Jobs[0].Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--connections=1") || !strings.Contains(args, "--concurrency=500") || !strings.HasSuffix(args, cluster.ServiceAddr) {
		t.Fatalf("ghz args %s", args)
	}
}
