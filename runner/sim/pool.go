package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/stacks"
)

// Config sizes the simulated pool. Its defaults are the local pool's (runner/emulator), so that
// a scenario reads the same on both targets.
type Config struct {
	Pods, Workers                 int // gateway pods and workers per pod (6, 1)
	WaypointPods, WaypointWorkers int // waypoint pods and their workers (3, 2)
	Cost                          model.Cost
	Balance                       string // the L4 balancer's mode (random)
	Seed                          uint64 // pod placement and every random choice; 0 picks one
	ClientRTT, UpstreamRTT        time.Duration
	Envoy, Codec                  string
	// ListenerDrainTime is how long a replaced listener keeps its connections (Envoy's
	// --drain-time-s; the local pool's 1 s by default).
	ListenerDrainTime time.Duration
	// CPULimit and CPURequest are the gateway container's, in millicores (0: the workers' cores;
	// CPULimit -1: none).
	CPULimit, CPURequest int64
	// DispatcherStats is the bootstrap's enable_dispatcher_stats (emulator.Config's).
	DispatcherStats bool
	// JWTVerify is what one RS256 verification costs a worker (the socket emulator times its
	// own at start; the simulator takes a fixed one).
	JWTVerify time.Duration
	// Backend is go-httpbin's (and the gRPC backend's) own answer time on loopback, before any
	// delay a path asks for.
	Backend time.Duration
	// ClientRead is how fast a client reads one connection (bytes a second): the rate a Go
	// HTTP/2 client's one read loop per connection (x/net http2 ClientConn.readLoop) takes a
	// connection's frames on the local pool's two cores, which bounds a connection's responses
	// before Envoy's buffer limit does (08-buffers). Measured where the worker is not the
	// slower end: igwlab suite --target local --only 08-buffers --service-time 50us --per-kib
	// 100ns --repeat 3 reads 187 MB/s (64 KiB responses times the rate; single runs 143-196).
	ClientRead float64
	// Harness is the machine a local target shares with its clients (harness.go); zero: none.
	Harness Harness
}

// Defaults of the simulated pool: the local pool's, and what the local target measures of its
// machine where the simulator cannot measure (calibrated against it: docs/local-target.md).
var Defaults = Config{Pods: 6, Workers: 1, WaypointPods: 3, WaypointWorkers: 2, Cost: model.DefaultCost, Balance: model.BalanceRandom,
	Envoy: stacks.DefaultEnvoy, Codec: stacks.CodecOghttp2, ListenerDrainTime: time.Second,
	JWTVerify: 60 * time.Microsecond, Backend: 150 * time.Microsecond, ClientRead: 190e6}

// Limits on what the simulator holds in memory: a pool and its clients this large stay well
// under 2 GiB.
const (
	MaxPods        = 1000
	MaxWorkers     = 64
	MaxConnections = 200000
)

// Check refuses a pool the simulator cannot run, naming the field and its range.
func (c Config) Check() error {
	var errs []error
	for _, f := range []struct {
		name   string
		v, max int
	}{{"pods", c.Pods, MaxPods}, {"workers", c.Workers, MaxWorkers}, {"waypoint pods", c.WaypointPods, 100}, {"waypoint workers", c.WaypointWorkers, MaxWorkers}} {
		lo := 1
		if f.name == "waypoint pods" {
			lo = 0
		}
		if f.v < lo || f.v > f.max {
			errs = append(errs, fmt.Errorf("%s %d: allowed %d..%d", f.name, f.v, lo, f.max))
		}
	}
	switch c.Balance {
	case model.BalanceRandom, model.BalanceRoundRobin, model.BalanceSourceHash:
	default:
		errs = append(errs, fmt.Errorf("balance %q: allowed %s, %s, %s", c.Balance, model.BalanceRandom, model.BalanceRoundRobin, model.BalanceSourceHash))
	}
	if _, err := stacks.LookupEnvoy(c.Envoy); err != nil {
		errs = append(errs, err)
	}
	if c.Codec != stacks.CodecOghttp2 && c.Codec != stacks.CodecNghttp2 {
		errs = append(errs, fmt.Errorf("codec %q: allowed %s, %s", c.Codec, stacks.CodecOghttp2, stacks.CodecNghttp2))
	}
	if c.Harness.Cores < 0 || c.Harness.Cores > 1024 || c.Harness.Request < 0 || c.Harness.PerKiB < 0 || c.Harness.Hop < 0 {
		errs = append(errs, fmt.Errorf("harness %+v: cores 0..1024 and costs not negative", c.Harness))
	}
	if c.ClientRead <= 0 {
		errs = append(errs, fmt.Errorf("client read rate %g: must be positive", c.ClientRead))
	}
	return errors.Join(errs...)
}

// Pool is the simulated gateway pool: gateway pods in slots, a waypoint tier, their L4
// balancers and the listener every pod serves.
type Pool struct {
	Sim *Sim
	cfg Config
	rng *rand.Rand

	gateway, waypoints []*Pod
	l4, wl4            *model.L4
	setup              model.Setup
	gen                int
	// base is the configuration the pool was made with (Resize's zero fields keep it);
	// pending counts the lifecycle steps still to come (events.go).
	base    Config
	pending int
	// machine is the harness's (nil: none).
	machine *machine
	// applied counts the setups applied: each reseeds the L4 balancers (model.ScenarioSeed).
	applied int
	// wpPools are the gateway workers' HTTP/2 pools to the waypoint tier (waypoint.go).
	wpPools  map[*worker]*transport
	nextConn int
	// Timeline is every change the pool went through (events.go).
	Timeline []Event
}

// New makes a pool at virtual time base.
func New(cfg Config, base time.Time) (*Pool, error) {
	if cfg.Cost == (model.Cost{}) {
		cfg.Cost = model.DefaultCost
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	p := &Pool{Sim: NewSim(base), cfg: cfg, base: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1)),
		l4: model.NewL4(cfg.Balance, cfg.Seed), wl4: model.NewL4(model.BalanceRandom, cfg.Seed^0xabcdef), machine: newMachine(cfg.Harness)}
	base0 := p.listener(model.Setup{})
	for i := 0; i < cfg.WaypointPods; i++ {
		pod := p.newPod(roleWaypoint, i)
		pod.start(base0)
		pod.ready = true
		p.waypoints = append(p.waypoints, pod)
	}
	for i := 0; i < cfg.Pods; i++ {
		pod := p.newPod(roleGateway, i)
		pod.start(base0)
		pod.ready = true
		p.gateway = append(p.gateway, pod)
	}
	return p, nil
}

// Config is the pool's configuration.
func (p *Pool) Config() Config { return p.cfg }

// Base is the configuration the pool was made with, before any resize.
func (p *Pool) Base() Config { return p.base }

// listener is the configuration pods serve s with at the pool's Envoy release.
func (p *Pool) listener(s model.Setup) *model.Listener {
	return model.NewListener(s, p.cfg.Envoy, p.gen)
}

// Gateway lists the gateway pods' slots; Waypoints the waypoint pods.
func (p *Pool) Gateway() []*Pod   { return p.gateway }
func (p *Pool) Waypoints() []*Pod { return p.waypoints }

// serving lists the pods of a tier the L4 balancer may pick, in slot order.
func serving(pods []*Pod) []*Pod {
	var out []*Pod
	for _, pod := range pods {
		if pod.Serving() {
			out = append(out, pod)
		}
	}
	return out
}

// Apply puts a setup in force on every gateway pod, as a new listener config does: open
// connections keep the old listener and drain (runner/model: Listener; pod.apply). It reports
// whether the setup changed (a re-apply of the same one changes nothing).
func (p *Pool) Apply(s model.Setup) bool {
	p.applied++
	p.l4.Reseed(model.ScenarioSeed(p.cfg.Seed, p.applied))
	p.wl4.Reseed(model.ScenarioSeed(p.cfg.Seed^0xabcdef, p.applied))
	changed := model.SetupKey(s) != model.SetupKey(p.setup)
	p.setup = s
	if !changed {
		return false
	}
	p.gen++
	cfg := p.listener(s)
	for _, pod := range p.gateway {
		if pod.up {
			pod.apply(cfg, true)
		} else {
			pod.cfg = cfg
		}
	}
	return true
}

// PodNamed is the gateway or waypoint pod of that name (nil: none).
func (p *Pool) PodNamed(name string) *Pod {
	for _, tier := range [][]*Pod{p.gateway, p.waypoints} {
		for _, pod := range tier {
			if pod.Name == name {
				return pod
			}
		}
	}
	return nil
}

// Setup is the setup in force.
func (p *Pool) Setup() model.Setup { return p.setup }

// cpuLimitOf and cpuRequestOf are a configuration's gateway container CPU in millicores
// (model.CPULimit, model.CPURequest; 0: none).
func (p *Pool) cpuLimitOf(c Config) int64 { return model.CPULimit(c.Workers, c.CPULimit) }
func (p *Pool) cpuRequestOf(c Config) int64 {
	return model.CPURequest(c.Workers, c.CPULimit, c.CPURequest)
}
