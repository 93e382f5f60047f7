// Package emulator is the local target's gateway pool: N emulated Istio ingress gateway pods on
// distinct loopback addresses, each with W workers, behind an L4 balancer that places every
// connection on a random pod as kube-proxy does, with an optional ambient waypoint tier and
// real backends (go-httpbin and a gRPC server).
//
// It is a model of Envoy's threading on real sockets and a real HTTP/2 stack, not Envoy: a
// connection is pinned to one worker for life; a worker serves the work of all its connections
// one piece at a time on a virtual clock (service time per request plus per KiB), so a worker
// that gets too much work queues it while the rest of the pool idles; every scenario knob is
// applied with Envoy's semantics; and each pod serves Envoy's stat names, as Istio's proxy
// names them, on its own admin port.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/stacks"
)

// Pool is a running emulated gateway pool.
type Pool struct {
	cfg Config
	// base is the configuration the pool started with: Resize's zero values go back to it.
	base     Config
	clock    *Clock
	backends *Backends
	jwt      *jwtAuthn
	access   *accessLog
	tls      *gatewayTLS

	gateway     []*Pod
	waypoints   []*Pod
	vip         *Balancer
	waypointVIP *Balancer
	kubelet     *kubelet

	obs observer
	// runners serve the streams (runners.go).
	runners *runners

	closed atomic.Bool

	mu         sync.Mutex
	generation int
	// applied counts the setups applied: each reseeds the L4 balancers (model.ScenarioSeed).
	applied int
	setup   Setup
	// wpSetup is the waypoints' setup: an east-west scenario's knobs (eastwest.go).
	wpSetup Setup
	// clients are the mesh client pods east-west scenarios run in.
	clients []*capturedPod
	events  []Event
	// lifecycle counts the pending steps of pods coming and going (readiness, terminations,
	// restarts), so that the next scenario starts once they are over.
	lifecycle sync.WaitGroup
}

// Start brings the pool up: backends, waypoint tier, gateway pods, balancers.
func Start(cfg Config) (*Pool, error) {
	if cfg.WaypointWorkers == 0 {
		cfg.WaypointWorkers = 2
	}
	if cfg.ListenerPort == 0 {
		cfg.ListenerPort = 80
		if cfg.TLS {
			cfg.ListenerPort = 443
		}
	}
	if cfg.Balance == "" {
		cfg.Balance = BalanceRandom
	}
	if cfg.L4Path == "" {
		cfg.L4Path = PathHandoff
	}
	if cfg.Model == (Model{}) {
		cfg.Model = DefaultModel
	}
	if cfg.Codec == "" {
		cfg.Codec = CodecOghttp2
	}
	if cfg.ListenerDrainTime == 0 {
		cfg.ListenerDrainTime = DefaultListenerDrainTime
	}
	if cfg.Envoy == "" {
		cfg.Envoy = stacks.DefaultEnvoy
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	p := &Pool{cfg: cfg, base: cfg, clock: NewClock(), runners: newRunners()}
	var err error
	if p.backends, err = StartBackends(2); err != nil { // the lab runs two httpbin replicas
		p.Close()
		return nil, err
	}
	if p.jwt, err = newJWTAuthn(); err != nil {
		p.Close()
		return nil, err
	}
	p.access = newAccessLog(cfg.AccessLog)
	if cfg.TLS {
		if p.tls, err = newGatewayTLS(); err != nil {
			p.Close()
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1))
	base := p.listenerConfig(Setup{}, 0)

	wpCfg := p.listenerConfig(Setup{}, 0)
	for i := 0; i < cfg.WaypointPods; i++ {
		pod := p.newPod(roleWaypoint, i, rng, "igw-test-waypoint", "0.0.0.0_15008", "inbound_0.0.0.0_15008", 1)
		pod.mcsCap = 100 // Istio caps streams on the HBONE listener: all its streams share one worker
		pod.build(wpCfg)
		pod.ready = true
		if err := pod.listen(0); err != nil {
			p.Close()
			return nil, err
		}
		if err := pod.listenHBONE(); err != nil {
			p.Close()
			return nil, err
		}
		p.waypoints = append(p.waypoints, pod)
	}
	if len(p.waypoints) > 0 {
		if p.waypointVIP, err = newBalancer("127.0.0.1:0", BalanceRandom, cfg.L4Path, cfg.Seed^0xabcdef, func() []*Pod { return p.waypoints }); err != nil {
			p.Close()
			return nil, err
		}
	}
	lport := fmt.Sprint(cfg.ListenerPort)
	for i := 0; i < cfg.Pods; i++ {
		pod := p.newPod(roleGateway, i, rng, "istio-ingressgateway", "0.0.0.0_"+lport, "outbound_0.0.0.0_"+lport, 0)
		pod.build(base)
		pod.ready = true
		if err := pod.listen(0); err != nil {
			p.Close()
			return nil, err
		}
		p.gateway = append(p.gateway, pod)
	}
	if p.vip, err = newBalancer(net.JoinHostPort("127.0.0.1", fmt.Sprint(cfg.VIPPort)), cfg.Balance, cfg.L4Path, cfg.Seed, func() []*Pod { return p.gateway }); err != nil {
		p.Close()
		return nil, err
	}
	p.vip.rtt, p.vip.clock = cfg.ClientRTT, p.clock
	for _, pod := range append(append([]*Pod{}, p.gateway...), p.waypoints...) {
		if err := pod.startAdmin(0); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := p.startKubelet(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// newPod names a pod like a Deployment's pod and gives it the next loopback address.
func (p *Pool) newPod(role podRole, i int, rng *rand.Rand, deploy, listener, prefix string, block int) *Pod {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	suffix := make([]byte, 5)
	for j := range suffix {
		suffix[j] = letters[rng.IntN(len(letters))]
	}
	rs := map[podRole]string{roleGateway: "5d8f7c9b6d", roleWaypoint: "6b9f8d7c5f"}[role]
	return &Pod{
		pool: p, role: role, Index: i,
		Name:         fmt.Sprintf("%s-%s-%s", deploy, rs, suffix),
		ip:           podIP(block, i),
		listenerAddr: listener, hcmPrefix: prefix,
		rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))),
	}
}

var (
	loopbackOnce  sync.Once
	loopbackAlias bool
)

// podIP gives pod i of a tier its own loopback address (127.0.<block>.<i+2>). Where only
// 127.0.0.1 exists (macOS without aliases), every pod shares it on its own port.
func podIP(block, i int) string {
	loopbackOnce.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err == nil {
			ln.Close()
			loopbackAlias = true
		} else if !errors.Is(err, syscall.EADDRNOTAVAIL) && !strings.Contains(err.Error(), "assign requested address") {
			loopbackAlias = true
		}
	})
	if !loopbackAlias {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.0.%d.%d", block, i+2)
}

// VIP is the gateway Service's address (host:port) that clients connect to.
func (p *Pool) VIP() string { return p.vip.Addr() }

// Pods returns the gateway pods.
func (p *Pool) Pods() []*Pod { return p.gateway }

// Waypoints returns the waypoint pods.
func (p *Pool) Waypoints() []*Pod { return p.waypoints }

// Ztunnels returns the emulated node proxies in front of the backend replicas.
func (p *Pool) Ztunnels() []*Ztunnel { return p.backends.Ztunnels }

// Balancer returns the gateway tier's L4 balancer.
func (p *Pool) Balancer() *Balancer { return p.vip }

// Config returns the pool's configuration.
func (p *Pool) Config() Config { return p.cfg }

// Token mints a JWT that scenario 11's filter accepts.
func (p *Pool) Token(issuer string) string { return p.jwt.Token(issuer, 24*time.Hour) }

// JWKS is the public key set the JWT filter trusts.
func (p *Pool) JWKS() string { return p.jwt.JWKS() }

// TLSHandshakeCost is the measured cost of a handshake booked per new connection (0 without TLS).
func (p *Pool) TLSHandshakeCost() time.Duration {
	if p.tls == nil {
		return 0
	}
	return p.tls.cost
}

// FilterCosts reports the measured per-request costs of scenario 11's filters.
func (p *Pool) FilterCosts() (jwt, accessLogEntry time.Duration) { return p.jwt.cost, p.access.cost }

// Apply installs a scenario's setup on every gateway pod, as an EnvoyFilter change reaches
// every gateway through istiod. Connections accepted under the previous setup drain. It
// returns how many connections were asked to drain.
func (p *Pool) Apply(s Setup) int {
	p.mu.Lock()
	p.generation++
	p.applied++
	p.vip.reseed(model.ScenarioSeed(p.cfg.Seed, p.applied))
	if p.waypointVIP != nil {
		p.waypointVIP.reseed(model.ScenarioSeed(p.cfg.Seed^0xabcdef, p.applied))
	}
	changed := model.SetupKey(p.setup) != model.SetupKey(s)
	p.setup = s
	cfg := p.listenerConfig(s, p.generation)
	gen := p.generation
	p.mu.Unlock()
	drained := 0
	for _, pod := range p.gateway {
		drained += pod.apply(cfg, changed, p.cfg.ListenerDrainTime)
	}
	p.resetWaypoints()
	p.event("apply", "", fmt.Sprintf("generation %d, changed %v, %d connections draining", gen, changed, drained))
	return drained
}

// WaitDrained waits until no connection accepted under a replaced listener is still open on
// a gateway or waypoint pod: they close as their drains end, or when the listener's drain time does. The
// runner waits for this before it measures, as it waits on a real gateway's draining gauges
// (which, unlike this, stay up for the whole drain time even when nothing is left to drain).
func (p *Pool) WaitDrained(ctx context.Context) error {
	for {
		old := 0
		for _, pod := range append(append([]*Pod{}, p.gateway...), p.waypoints...) {
			gen := pod.cfg.Load().Generation
			pod.mu.Lock()
			for sc := range pod.conns {
				if sc.cfg.Generation < gen {
					old++
				}
			}
			pod.mu.Unlock()
		}
		if old == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops everything.
func (p *Pool) Close() {
	p.closed.Store(true)
	defer p.runners.close()
	if p.vip != nil {
		p.vip.Close()
	}
	if p.waypointVIP != nil {
		p.waypointVIP.Close()
	}
	for _, pod := range append(append([]*Pod{}, p.gateway...), p.waypoints...) {
		pod.stop()
		pod.stopAdmin()
	}
	if p.backends != nil {
		p.backends.Close()
	}
	if p.kubelet != nil {
		p.kubelet.close()
	}
	p.clock.Close()
}
