// Package local is the emulated gateway pool on loopback as a target: every scenario runs with
// its local departures (shorter windows, knobs scaled to one emulated worker's capacity), each
// one shown next to the lab's value.
package local

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Kind is the local target's kind.
const Kind gateway.Kind = "local"

func init() {
	gateway.Register(gateway.Driver{Kind: Kind, Help: "emulated pool on loopback", Order: 10,
		Open:    func(_ context.Context, o gateway.Options) (gateway.Target, error) { return NewLocal(o.Pool) },
		Resolve: Resolve,
		// The pool drains a replaced listener's connections as they finish: nothing waits.
		Timing: func(gateway.Options) (gateway.Timing, error) {
			return gateway.Timing{Workers: 1, Source: "the local pool drains at once"}, nil
		}})
}

// Resolve runs a scenario with its local departures, and lists them.
func Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure) {
	return lab.WithLocal(), lab.Departures()
}

// Local is the emulated gateway pool on loopback.
type Local struct {
	Pool   *emulator.Pool
	client *http.Client
}

// NewLocal starts an emulated pool.
func NewLocal(cfg emulator.Config) (*Local, error) {
	p, err := emulator.Start(cfg)
	if err != nil {
		return nil, err
	}
	return &Local{Pool: p, client: &http.Client{Timeout: gateway.AdminTimeout}}, nil
}

// Resolve implements gateway.Target: under another Envoy release's defaults, the knobs a
// scenario leaves unset take that release's values, so that what ran says what was in force.
func (l *Local) Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure) {
	sc, deps := Resolve(lab)
	if v := l.Pool.Config().Envoy; v != stacks.DefaultEnvoy {
		rel, _ := stacks.LookupEnvoy(v) // checked when the pool started
		sc.Knobs = sc.Knobs.WithDefaults(rel)
	}
	return sc, deps
}

// Info implements gateway.Target.
func (l *Local) Info(context.Context) (gateway.Info, error) {
	c := l.Pool.Config()
	jwt, al := l.Pool.FilterCosts()
	return gateway.Info{Name: string(Kind), Pods: c.Pods, Concurrency: c.Workers, Waypoints: c.WaypointPods,
		Endpoint: l.Pool.VIP(), Details: map[string]any{
			"service_time_us": c.Model.ServiceTime.Microseconds(), "per_kib_us": c.Model.PerKiB.Microseconds(),
			"conn_cost_us": c.Model.ConnCost.Microseconds(), "per_frame_us": c.Model.PerFrame.Microseconds(), "balance": c.Balance, "seed": c.Seed,
			"waypoint_workers": c.WaypointWorkers, "jwt_verify_cost_us": jwt.Microseconds(),
			"access_log_entry_cost_us": al.Microseconds(), "tls": c.TLS,
			"tls_handshake_cost_us": l.Pool.TLSHandshakeCost().Microseconds(),
			"http2_codec":           c.Codec, "listener_drain_s": c.ListenerDrainTime.Seconds(),
		}, Departures: Departures(c), ClientRTTMs: ms(c.ClientRTT), UpstreamRTTMs: ms(c.UpstreamRTT), EnvoyDefaults: c.Envoy}, nil
}

// Departures are where the pool itself runs every scenario differently from the lab: its
// short listener drain, its Envoy release and CPU when set, and a round-trip time when one is.
func Departures(c emulator.Config) []stacks.Departure {
	out := []stacks.Departure{{
		Field: "gateway listener drain time (Envoy --drain-time-s)",
		Lab:   "the lab's igwlab:gatewayDrainDuration, the gateway pods' drainDuration (Istio's own default is 45s)",
		Local: c.ListenerDrainTime.String(),
	}}
	if c.Envoy != "" && c.Envoy != stacks.DefaultEnvoy {
		rel, _ := stacks.LookupEnvoy(c.Envoy)
		lab, _ := stacks.LookupEnvoy(stacks.DefaultEnvoy)
		out = append(out, stacks.Departure{Field: "Envoy defaults of knobs a scenario leaves unset (--envoy-defaults)",
			Lab:   fmt.Sprintf("the release igwlab:istioVersion ships: Envoy %s with the lab's Istio %s (%s)", lab.Envoy, lab.Istio, defaultsText(lab)),
			Local: fmt.Sprintf("Envoy %s (Istio %s and later: %s)", rel.Envoy, rel.Istio, defaultsText(rel))})
	}
	if c.CPULimit != 0 || c.CPURequest != 0 {
		limit := "none"
		if c.CPULimit > 0 {
			limit = stacks.CPU(c.CPULimit).String() + " cores"
		}
		req := "the limit"
		if c.CPURequest > 0 {
			req = stacks.CPU(c.CPURequest).String() + " cores"
		}
		out = append(out, stacks.Departure{Field: "gateway container CPU (--cpu-limit, --cpu-request)",
			Lab:   "limit = request = igwlab:proxyConcurrency cores, unless igwlab:gatewayCpuLimit and gatewayCpuRequest say otherwise (a scenario's pool.cpu_limit wins on both)",
			Local: fmt.Sprintf("limit %s, request %s, enforced as CFS quota per 100 ms period", limit, req)})
	}
	for _, t := range []struct {
		tier, flag string
		rtt        time.Duration
	}{{"clients to gateway", "--client-rtt", c.ClientRTT}, {"gateway to upstreams", "--upstream-rtt", c.UpstreamRTT}} {
		if t.rtt > 0 {
			out = append(out, stacks.Departure{Field: "round-trip time, " + t.tier,
				Lab:   "the cluster network's own (well under a millisecond inside one k3d node)",
				Local: fmt.Sprintf("%s (--rtt or %s: every byte delayed %s each way)", t.rtt, t.flag, t.rtt/2)})
		}
	}
	return out
}

// defaultsText lists a release's defaults by knob name.
func defaultsText(r stacks.EnvoyRelease) string {
	var parts []string
	for _, s := range stacks.Registry {
		if v, ok := r.Defaults[s.Path]; ok {
			parts = append(parts, s.Path[strings.LastIndex(s.Path, ".")+1:]+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Apply implements gateway.Target: the knobs reach every pod at once, as a new listener config does,
// and like the cluster target it returns once the replaced listeners have drained, so that
// no connection of the previous setup is left when the scenario is measured.
func (l *Local) Apply(ctx context.Context, sc stacks.Scenario) error {
	s := emulator.Setup{Knobs: sc.Knobs, Filters: sc.Filters, Waypoint: sc.Waypoint}
	if sc.EastWest != nil {
		// The knobs are the waypoint's: an EnvoyFilter on the waypoint, not the gateway.
		if _, err := l.Pool.ApplyEastWest(s, *sc.EastWest); err != nil {
			return err
		}
	} else {
		l.Pool.Apply(s)
	}
	return l.Pool.WaitDrained(ctx)
}

// Pods implements Target.
func (l *Local) Pods(_ context.Context, role string) ([]gateway.Pod, error) {
	var src []*emulator.Pod
	switch role {
	case gateway.Gateway:
		src = l.Pool.Pods()
	case gateway.Waypoint:
		src = l.Pool.Waypoints()
	case gateway.Ztunnel:
		var out []gateway.Pod
		for _, z := range l.Pool.Ztunnels() {
			out = append(out, gateway.Pod{Name: z.Name, Role: gateway.Ztunnel, Admin: z.MetricsURL()})
		}
		return out, nil
	case gateway.Kubelet:
		return []gateway.Pod{{Name: emulator.NodeName, Role: gateway.Kubelet, Admin: l.Pool.KubeletURL()}}, nil
	}
	out := make([]gateway.Pod, 0, len(src))
	for _, p := range src {
		// A slot with no pod in it (scaled in, replaced by a rollout) is not listed, as a
		// deleted pod is not.
		if role == gateway.Gateway && !p.Exists() {
			continue
		}
		out = append(out, gateway.Pod{Name: p.Name, Role: role, Admin: p.AdminURL()})
	}
	return out, nil
}

// Admin implements Target.
func (l *Local) Admin(ctx context.Context, pod gateway.Pod, path string) ([]byte, error) {
	if pod.Role == gateway.Ztunnel && strings.HasPrefix(path, "/stats/prometheus") {
		path = "/metrics" // ztunnel's metrics endpoint
	}
	b, err := stats.GetAdmin(ctx, l.client, pod.Admin, path)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	return b, nil
}

// Load implements Target.
func (l *Local) Load(ctx context.Context, spec load.Spec) (*load.Result, error) {
	spec.Target, spec.TLS = l.Pool.VIP(), l.Pool.Config().TLS
	if spec.ClientPods > 0 {
		// Each client pod's client connects to the service from its own pod: its node's
		// ztunnel captures it (east-west, no gateway and no TLS of the gateway's).
		pods, err := l.Pool.ClientPods(spec.ClientPods)
		if err != nil {
			return nil, err
		}
		spec.TLS, spec.Targets = false, nil
		for _, cp := range pods {
			spec.Targets = append(spec.Targets, cp.Addr)
		}
	}
	if spec.LB == load.RoundRobin {
		// A headless Service's DNS name answers with every ready pod's own address: the
		// client connects to each, past the L4 balancer; asked again (on a lost connection),
		// it answers with the pods ready then, no sooner than grpc-go's DNS resolver would.
		spec.Addresses = l.servingAddrs()
		spec.Names = &grpclab.Names{New: func() grpclab.Name { return &model.Resolution{} }, Resolve: l.servingAddrs}
	}
	return load.Run(ctx, spec)
}

// servingAddrs are the addresses of the pods in the endpoints now.
func (l *Local) servingAddrs() []string {
	var out []string
	for _, p := range l.Pool.Pods() {
		if a := p.Addr(); a != "" && p.Serving() {
			out = append(out, a)
		}
	}
	return out
}

// ScrapeTargets lists the pool's metrics endpoints for a Prometheus scrape config: the gateway
// and waypoint pods' admin /stats/prometheus and each ztunnel's /metrics.
func (l *Local) ScrapeTargets() []dashboard.ScrapeTarget {
	var out []dashboard.ScrapeTarget
	add := func(job, name, rawURL, path string) {
		if u, err := url.Parse(rawURL); err == nil {
			out = append(out, dashboard.ScrapeTarget{Job: job, Pod: name, HostPort: u.Host, Path: path})
		}
	}
	for _, p := range l.Pool.Pods() {
		add("istio-ingressgateway", p.Name, p.AdminURL(), "/stats/prometheus")
	}
	for _, p := range l.Pool.Waypoints() {
		add("waypoint", p.Name, p.AdminURL(), "/stats/prometheus")
	}
	for _, z := range l.Pool.Ztunnels() {
		add("ztunnel", z.Name, z.MetricsURL(), "/metrics")
	}
	return out
}

// Token implements Target.
func (l *Local) Token(issuer string) (string, error) { return l.Pool.Token(issuer), nil }

// Close implements Target.
func (l *Local) Close() error {
	l.Pool.Close()
	return nil
}

var _ gateway.Target = (*Local)(nil)

// Disruptions implements Disrupted: pod kills, restarts and stuck workers since a time (knob
// changes and the scenario's own events are its own doing and are left out).
func (l *Local) Disruptions(since time.Time) []gateway.Disruption {
	var out []gateway.Disruption
	for _, e := range l.Pool.Events() {
		if e.Kind != "apply" && !e.Planned && !e.Time.Before(since) {
			out = append(out, gateway.Disruption{Time: e.Time, Kind: e.Kind, Pod: e.Pod, Detail: e.Detail})
		}
	}
	return out
}
