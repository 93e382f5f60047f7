// Package simulated is the gateway pool simulated in virtual time as a target (--target sim):
// the local target's pool and rules (runner/model), run as a discrete-event simulation
// (runner/sim) with no sockets, so a pool of hundreds of pods and a minute of load run in
// seconds. Every scenario runs with the local departures, as on the local target, so that the
// two give the same calls (the calibration tier holds them to it).
package simulated

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/runner/sim"
	"github.com/igwlab/igwlab/stacks"
)

// Kind is the simulated target's kind.
const Kind gateway.Kind = "sim"

func init() {
	gateway.Register(gateway.Driver{Kind: Kind, Help: "the pool simulated in virtual time, any size up to 1000 pods", Order: 15,
		MaxPods: sim.MaxPods, MaxWorkers: sim.MaxWorkers,
		Open: func(_ context.Context, o gateway.Options) (gateway.Target, error) {
			cfg, err := Config(o.Pool)
			if err != nil {
				return nil, err
			}
			if o.Harness {
				cfg.Harness = sim.LocalHarness
			}
			return Open(cfg)
		},
		Resolve: local.Resolve,
		Timing: func(o gateway.Options) (gateway.Timing, error) {
			return gateway.Timing{Workers: max(o.Pool.Workers, 1), Virtual: true, Source: "virtual time: the windows take the wall time their simulation takes"}, nil
		}})
}

// epoch is virtual time zero: a fixed instant, so that a run's timestamps do not depend on when
// it ran and two runs with one seed write the same files.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Target is a simulated pool.
type Target struct {
	Pool *sim.Pool
	// mu serializes admin reads: the sampler reads pods in parallel while the pool stands
	// still, and a read updates a worker's bookkeeping.
	mu sync.Mutex
}

// Config is the simulated pool a local pool's configuration describes: the same pods, workers,
// costs, balancer, seed, round-trip times, Envoy release and CPU. What the simulator does not
// model is refused, naming the flag: TLS handshakes and memory limits.
func Config(c emulator.Config) (sim.Config, error) {
	if c.TLS {
		return sim.Config{}, fmt.Errorf("--tls: the simulated target does not model TLS handshakes (run it on --target local)")
	}
	if c.MemoryLimit != 0 && c.MemoryLimit != emulator.DefaultMemoryLimit {
		return sim.Config{}, fmt.Errorf("--memory-limit: the simulated target does not model memory (run it on --target local)")
	}
	s := sim.Defaults
	s.Pods, s.Workers, s.WaypointPods, s.WaypointWorkers = c.Pods, c.Workers, c.WaypointPods, c.WaypointWorkers
	s.DispatcherStats = c.DispatcherStats
	if c.Model != (model.Cost{}) {
		s.Cost = c.Model
	}
	if c.Balance != "" {
		s.Balance = c.Balance
	}
	s.Seed, s.ClientRTT, s.UpstreamRTT, s.CPULimit, s.CPURequest = c.Seed, c.ClientRTT, c.UpstreamRTT, c.CPULimit, c.CPURequest
	if c.Envoy != "" {
		s.Envoy = c.Envoy
	}
	if c.Codec != "" {
		s.Codec = c.Codec
	}
	if c.ListenerDrainTime > 0 {
		s.ListenerDrainTime = c.ListenerDrainTime
	}
	return s, s.Check()
}

// Open simulates a pool.
func Open(cfg sim.Config) (*Target, error) {
	p, err := sim.New(cfg, epoch)
	if err != nil {
		return nil, err
	}
	return &Target{Pool: p}, nil
}

// Check implements gateway.Checker: the client must be one the simulator has a model of, and
// the pool and client within what it holds.
func (t *Target) Check(sc stacks.Scenario) error {
	c := sc.Client
	if err := sim.CheckSpec(load.Spec{Kind: c.Kind, Mode: c.Mode, Concurrency: c.Concurrency, Connections: c.Connections}); err != nil {
		return err
	}
	if n := sc.Pool.Replicas; n > sim.MaxPods {
		return fmt.Errorf("pool.replicas %d: allowed 0..%d on the simulated target", n, sim.MaxPods)
	}
	if n := sc.Pool.Concurrency; n > sim.MaxWorkers {
		return fmt.Errorf("pool.concurrency %d: allowed 0..%d on the simulated target", n, sim.MaxWorkers)
	}
	return nil
}

// Fork implements gateway.Forker: a fresh pool of the same configuration, its seed drawn from
// this pool's and i (model.ScenarioSeed), so that fork i places its connections the same way on
// every run of a sweep with this seed.
func (t *Target) Fork(i int) (gateway.Target, error) {
	cfg := t.Pool.Base()
	cfg.Seed = model.ScenarioSeed(cfg.Seed, 1<<20+i)
	return Open(cfg)
}

// stopper turns a context into the simulation's stop question (Ctrl-C).
func stopper(ctx context.Context) func() bool { return func() bool { return ctx.Err() != nil } }

// Info implements gateway.Target.
func (t *Target) Info(context.Context) (gateway.Info, error) {
	c := t.Pool.Config()
	return gateway.Info{Name: string(Kind), Pods: c.Pods, Concurrency: c.Workers, Waypoints: c.WaypointPods, Endpoint: "virtual",
		Details: map[string]any{
			"service_time_us": c.Cost.ServiceTime.Microseconds(), "per_kib_us": c.Cost.PerKiB.Microseconds(),
			"conn_cost_us": c.Cost.ConnCost.Microseconds(), "per_frame_us": c.Cost.PerFrame.Microseconds(), "balance": c.Balance,
			"seed": c.Seed, "waypoint_workers": c.WaypointWorkers, "jwt_verify_cost_us": c.JWTVerify.Microseconds(),
			"backend_us": c.Backend.Microseconds(), "client_read_bytes_per_s": c.ClientRead,
			"http2_codec": c.Codec, "listener_drain_s": c.ListenerDrainTime.Seconds(), "virtual_time": true,
			"harness_cores": c.Harness.Cores,
		}, Departures: departures(c), ClientRTTMs: ms(c.ClientRTT), UpstreamRTTMs: ms(c.UpstreamRTT), EnvoyDefaults: c.Envoy}, nil
}

// departures are where every scenario on the simulated pool departs from the lab: the local
// pool's (its listener drain, its Envoy release, its CPU and round-trip times), and that the
// clients are models.
func departures(c sim.Config) []stacks.Departure {
	out := local.Departures(emulator.Config{ListenerDrainTime: c.ListenerDrainTime, Envoy: c.Envoy, CPULimit: c.CPULimit,
		CPURequest: c.CPURequest, ClientRTT: c.ClientRTT, UpstreamRTT: c.UpstreamRTT})
	return append(out, stacks.Departure{Field: "clients and backends",
		Lab:   "the real clients (h2dial, fortio, grpc-go) and backends (go-httpbin, the gRPC backend) over the cluster network",
		Local: fmt.Sprintf("models of their connection rules in virtual time (runner/sim); a client reads a connection at %.0f MB/s, a backend answers in %s", c.ClientRead/1e6, c.Backend)})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Resolve implements gateway.Target as the local target does.
func (t *Target) Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure) {
	sc, deps := local.Resolve(lab)
	if v := t.Pool.Config().Envoy; v != stacks.DefaultEnvoy {
		rel, _ := stacks.LookupEnvoy(v) // checked when the pool was made
		sc.Knobs = sc.Knobs.WithDefaults(rel)
	}
	return sc, deps
}

// Apply implements gateway.Target: the knobs reach every pod at once, and like the local target
// it returns once the replaced listeners have drained (their drain time, in virtual time).
func (t *Target) Apply(ctx context.Context, sc stacks.Scenario) error {
	if t.Pool.Apply(model.Setup{Knobs: sc.Knobs, Filters: sc.Filters, Waypoint: sc.Waypoint}) {
		t.Pool.Advance(t.Pool.Config().ListenerDrainTime+time.Millisecond, stopper(ctx))
	}
	return ctx.Err()
}

// Pods implements gateway.Target.
func (t *Target) Pods(_ context.Context, role string) ([]gateway.Pod, error) {
	var src []*sim.Pod
	switch role {
	case gateway.Gateway:
		src = t.Pool.Gateway()
	case gateway.Waypoint:
		src = t.Pool.Waypoints()
	case gateway.Kubelet:
		return []gateway.Pod{{Name: sim.NodeName, Role: gateway.Kubelet, Admin: "sim://" + sim.NodeName}}, nil
	case gateway.Ztunnel:
		return nil, nil // the simulator has no ztunnel
	}
	var out []gateway.Pod
	for _, p := range src {
		if p.Exists() {
			out = append(out, gateway.Pod{Name: p.Name, Role: role, Admin: "sim://" + p.Name})
		}
	}
	return out, nil
}

// Admin implements gateway.Target: the pod's admin page at the virtual time.
func (t *Target) Admin(ctx context.Context, pod gateway.Pod, path string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pod.Role == gateway.Kubelet {
		return t.Pool.Kubelet(path)
	}
	p := t.Pool.PodNamed(pod.Name)
	if p == nil {
		return nil, fmt.Errorf("pod %s: not found (gone)", pod.Name)
	}
	return p.Admin(path)
}

// Load implements gateway.Target.
func (t *Target) Load(ctx context.Context, spec load.Spec) (*load.Result, error) {
	return t.LoadTimed(ctx, spec, nil)
}

// LoadTimed implements gateway.Virtual.
func (t *Target) LoadTimed(ctx context.Context, spec load.Spec, hooks []gateway.Hook) (*load.Result, error) {
	hs := make([]sim.Hook, len(hooks))
	for i, h := range hooks {
		hs[i] = sim.Hook{At: h.At, Every: h.Every, F: h.F}
	}
	res, err := t.Pool.Load(spec, hs, stopper(ctx))
	if err == sim.ErrStopped {
		return res, ctx.Err()
	}
	return res, err
}

// Now implements gateway.Virtual.
func (t *Target) Now() time.Time { return t.Pool.Sim.Now() }

// Advance implements gateway.Virtual.
func (t *Target) Advance(ctx context.Context, d time.Duration) error {
	t.Pool.Advance(d, stopper(ctx))
	return ctx.Err()
}

// Token implements gateway.Target: the simulated JWT filter verifies no signature, it costs
// its worker what one verification does (sim.Config.JWTVerify).
func (t *Target) Token(issuer string) (string, error) { return "simulated." + issuer + ".token", nil }

// Close implements gateway.Target.
func (t *Target) Close() error { return nil }

var (
	_ gateway.Target  = (*Target)(nil)
	_ gateway.Virtual = (*Target)(nil)
)
