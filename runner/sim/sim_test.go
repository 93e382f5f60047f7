package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// TestEventOrder: events run by time, and those at one time in the order they were scheduled,
// whatever the order of scheduling.
func TestEventOrder(t *testing.T) {
	s := NewSim(time.Unix(0, 0))
	var got []int
	at := []int64{50, 10, 30, 10, 70, 0, 30, 90, 10, 60, 20, 40, 80, 0}
	for i, t := range at {
		s.At(t, func() { got = append(got, i) })
	}
	s.RunUntil(100, nil)
	want := slices.Clone(got)
	slices.SortStableFunc(want, func(a, b int) int { return int(at[a] - at[b]) })
	if !slices.Equal(got, want) || len(got) != len(at) || s.Tick() != 100 {
		t.Fatalf("ran %v, want %v (clock %d)", got, want, s.Tick())
	}
}

func knobs(t *testing.T, kv ...string) stacks.Knobs {
	t.Helper()
	var k stacks.Knobs
	for i := 0; i < len(kv); i += 2 {
		spec, ok := stacks.Lookup(kv[i])
		if !ok {
			t.Fatalf("no knob %s", kv[i])
		}
		if err := spec.Set(&k, kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func run(t *testing.T, cfg Config, k stacks.Knobs, spec load.Spec) (*Pool, *load.Result) {
	t.Helper()
	p, err := New(cfg, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	p.Apply(model.Setup{Knobs: k})
	res, err := p.Load(spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, res
}

// TestClientRules: each client opens the connections its library opens (each row's source in
// the driver's comment), and the gateway's knobs act on them as Envoy's do.
func TestClientRules(t *testing.T) {
	const mcs, mrpc = "hcm.http2_protocol_options.max_concurrent_streams", "hcm.common_http_protocol_options.max_requests_per_connection"
	for _, c := range []struct {
		name     string
		k        []string
		spec     load.Spec
		min, max int // connections the client opened
	}{
		{"fortio: one connection a thread", nil, load.Spec{Kind: "fortio", Concurrency: 4, QPS: 2000, Path: "/get"}, 4, 4},
		{"h2dial distinct: one a worker", nil, load.Spec{Kind: "h2dial", Mode: "distinct", Concurrency: 30, Path: "/get"}, 30, 30},
		{"h2dial shared under the cap: one", nil, load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 50, Path: "/get"}, 1, 1},
		{"h2dial shared at a cap of 100: dials more", []string{mcs, "100"}, load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 500, Path: "/get"}, 5, 12},
		{"grpc at a cap: queues, no new connection", []string{mcs, "100"}, load.Spec{Kind: "grpc", Concurrency: 500, Connections: 1}, 1, 1},
		{"grpc pool: its connections", nil, load.Spec{Kind: "grpc", Concurrency: 64, Connections: 8}, 8, 8},
		{"fortio under rotation: reconnects", []string{mrpc, "100"}, load.Spec{Kind: "fortio", Concurrency: 2, QPS: 2000, Path: "/get"}, 30, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Duration = 2 * time.Second
			cfg := Defaults
			cfg.Seed = 3
			_, res := run(t, cfg, knobs(t, c.k...), c.spec)
			if res.ConnectionsOpened < c.min || res.ConnectionsOpened > c.max || res.Requests == 0 || res.Errors > 0 {
				t.Errorf("%d connections (want %d..%d), %d requests, %d errors", res.ConnectionsOpened, c.min, c.max, res.Requests, res.Errors)
			}
		})
	}
}

// TestSameSeedSameRun: the simulation is a function of its seed.
func TestSameSeedSameRun(t *testing.T) {
	spec := load.Spec{Kind: "h2dial", Mode: "distinct", Concurrency: 40, Path: "/bytes/1024", Duration: time.Second}
	cfg := Defaults
	cfg.Seed = 11
	a, ra := run(t, cfg, stacks.Knobs{}, spec)
	b, rb := run(t, cfg, stacks.Knobs{}, spec)
	if ra.Requests != rb.Requests || ra.Latency != rb.Latency {
		t.Errorf("requests %d and %d, latency %+v and %+v", ra.Requests, rb.Requests, ra.Latency, rb.Latency)
	}
	for i, pod := range a.Gateway() {
		if x, y := pod.hcm.CxHTTP2Total.Value(), b.Gateway()[i].hcm.CxHTTP2Total.Value(); x != y {
			t.Errorf("%s: %d and %d connections", pod.Name, x, y)
		}
	}
}

// TestAdminPagesParse: a simulated pod's /stats/prometheus and the kubelet's cAdvisor page are
// Prometheus text that expfmt reads, with Envoy's and cAdvisor's names and the run's counts.
func TestAdminPagesParse(t *testing.T) {
	cfg := Defaults
	cfg.Seed, cfg.CPULimit = 5, 1000
	p, res := run(t, cfg, stacks.Knobs{}, load.Spec{Kind: "fortio", Concurrency: 6, QPS: 600, Path: "/get", Duration: time.Second})
	var total float64
	for _, pod := range p.Gateway() {
		page, err := pod.Admin("/stats/prometheus")
		if err != nil {
			t.Fatal(err)
		}
		snap, err := stats.ParseSnapshot(pod.Name, p.Sim.Now(), page)
		if err != nil {
			t.Fatalf("%s: %v", pod.Name, err)
		}
		names, err := stats.Discover([]stats.Snapshot{snap}, "httpbin")
		if err != nil {
			t.Fatalf("%s: %v", pod.Name, err)
		}
		total += stats.Extract(snap, names).RqTotal
	}
	if int64(total) < res.Requests {
		t.Errorf("the pods counted %v requests, the client %d", total, res.Requests)
	}
	page, err := p.Kubelet("/metrics/cadvisor")
	if err != nil || !strings.Contains(string(page), "container_cpu_cfs_periods_total") {
		t.Fatalf("cAdvisor page: %v\n%.400s", err, page)
	}
	if _, err := stats.ParseSnapshot("kubelet", p.Sim.Now(), page); err != nil {
		t.Errorf("cAdvisor page: %v", err)
	}
}

// TestRefusesWhatItCannotHold names the field and the limit.
func TestRefusesWhatItCannotHold(t *testing.T) {
	for _, c := range []struct {
		spec load.Spec
		want string
	}{
		{load.Spec{Kind: "h2load", Concurrency: 1}, `client.kind "h2load"`},
		{load.Spec{Kind: "h2dial", Mode: "pooled", Concurrency: 1}, `client.mode "pooled"`},
		{load.Spec{Kind: "fortio", Concurrency: MaxConnections + 1}, "client.concurrency 200001: allowed 1..200000"},
		{load.Spec{Kind: "grpc", Concurrency: 1, Connections: MaxConnections + 1}, "client.connections 200001: allowed 0..200000"},
	} {
		if err := CheckSpec(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	cfg := Defaults
	cfg.Pods = MaxPods + 1
	if _, err := New(cfg, time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), "pods 1001: allowed 1..1000") {
		t.Errorf("a pool of %d pods: %v", cfg.Pods, err)
	}
}
