package emulator

// The pool's size and cost model, and the checks a configuration passes before anything starts.

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/stacks"
)

// Model sets the cost of work on a worker (the pool's model, runner/model/cost.go).
type Model = model.Cost

// DefaultModel makes one worker serve about 2,500 small requests a second (model.DefaultCost).
var DefaultModel = model.DefaultCost

// Config sizes the pool.
type Config struct {
	Pods            int // gateway pods (6)
	Workers         int // workers per gateway pod: Envoy's concurrency (1)
	WaypointPods    int // waypoint pods (3)
	WaypointWorkers int // workers per waypoint pod (2)
	Model           Model
	Balance         string // L4 balance mode (random)
	L4Path          string // handoff (DNAT-like, default) or proxy
	VIPPort         int    // the gateway VIP's port on 127.0.0.1 (0 picks one)
	// TLS terminates TLS on the gateway (a certificate made at start): the listener becomes
	// 0.0.0.0_443, every new connection costs its worker a handshake, and ssl.handshake counts.
	TLS       bool
	Seed      uint64 // seeds pod placement; 0 picks one
	AccessLog io.Writer
	// ListenerPort is the port Envoy's listener is named after in stats (80 for the Istio
	// gateway chart); the emulated pods really listen on ephemeral loopback ports.
	ListenerPort int
	// Codec is Envoy's downstream HTTP/2 library: oghttp2 (Envoy 1.35's default, runtime flag
	// envoy.reloadable_features.http2_use_oghttp2) or nghttp2. They differ in what follows a
	// final GOAWAY: nghttp2 ignores new streams, oghttp2 serves them.
	Codec string
	// ClientRTT is the round-trip time between the clients and the gateway pods, and
	// UpstreamRTT between the gateway pods and their upstreams: every byte on those connections
	// is delayed by half of it each way (0: loopback's).
	ClientRTT, UpstreamRTT time.Duration
	// upstreamOverConns keeps the hop to go-httpbin on connections without an upstream round
	// trip: the tests compare the in-process exchange with it (upstream_local.go).
	upstreamOverConns bool
	// ListenerDrainTime is how long a replaced listener's connections may drain before they are
	// closed: Envoy's --drain-time-s, which Istio sets from the proxy's drainDuration.
	ListenerDrainTime time.Duration
	// Envoy is the Envoy release whose defaults the pods run with for the knobs a scenario
	// leaves unset (stacks.EnvoyReleases; "": stacks.DefaultEnvoy, Istio 1.27's).
	Envoy string
	// MemoryLimit is each gateway pod's container memory limit in bytes (0: the chart's
	// default, DefaultMemoryLimit; negative: none), and StreamMemory what each stream counts
	// against it (0: DefaultStreamMemory).
	MemoryLimit, StreamMemory int64
	// CPULimit and CPURequest are each gateway pod's container CPU limit and request, in
	// millicores. A limit of 0 is the lab's, one core per worker (the lab sets request = limit
	// = concurrency); a negative one is none. A request of 0 is the limit.
	CPULimit, CPURequest int64
	// DispatcherStats is the bootstrap's enable_dispatcher_stats: each worker's event-loop
	// histograms (listener_manager.worker_<id>.dispatcher.*). Off by default, as Istio leaves it;
	// Envoy reads it at start, so it is the pods' and not a scenario's.
	DispatcherStats bool
}

// cpuLimit is the CFS limit each gateway pod runs under, in millicores (0: none).
func (c *Config) cpuLimit() int64 { return model.CPULimit(c.Workers, c.CPULimit) }

// cpuRequest is each gateway pod's CPU request in millicores (0 with no limit and none given).
func (c *Config) cpuRequest() int64 { return model.CPURequest(c.Workers, c.CPULimit, c.CPURequest) }

// memoryLimit is the limit each pod is held to (0: none).
func (c *Config) memoryLimit() int64 {
	switch {
	case c.MemoryLimit < 0:
		return 0
	case c.MemoryLimit == 0:
		return DefaultMemoryLimit
	}
	return c.MemoryLimit
}

// HTTP/2 codecs Envoy can use downstream (which one each release defaults to: stacks.EnvoyReleases).
const (
	CodecOghttp2 = stacks.CodecOghttp2
	CodecNghttp2 = stacks.CodecNghttp2
)

// DefaultListenerDrainTime is Istio's default drainDuration (ProxyConfig), which its proxy
// passes to Envoy as --drain-time-s.
const DefaultListenerDrainTime = 45 * time.Second

// MaxPods and MaxWorkers bound the socket emulator's pool: every pod listens on loopback and
// every worker is a goroutine with its sockets.
const (
	MaxPods    = 64
	MaxWorkers = 64
)

// Check validates the configuration.
func (c *Config) Check() error { return c.CheckWithin(MaxPods, MaxWorkers) }

// CheckWithin validates the configuration for a pool of at most maxPods pods of maxWorkers
// workers (the simulated target runs larger pools from the same configuration).
func (c *Config) CheckWithin(maxPods, maxWorkers int) error {
	if c.Pods < 1 || c.Pods > maxPods {
		return fmt.Errorf("pods %d: allowed 1..%d", c.Pods, maxPods)
	}
	if c.Workers < 1 || c.Workers > maxWorkers {
		return fmt.Errorf("concurrency %d: allowed 1..%d workers per pod", c.Workers, maxWorkers)
	}
	if c.WaypointPods < 0 || c.WaypointPods > 32 {
		return fmt.Errorf("waypoint pods %d: allowed 0..32", c.WaypointPods)
	}
	if c.WaypointWorkers < 1 || c.WaypointWorkers > 64 {
		return fmt.Errorf("waypoint workers %d: allowed 1..64", c.WaypointWorkers)
	}
	if c.Model.ServiceTime <= 0 || c.Model.ServiceTime > time.Second {
		return fmt.Errorf("service time %s: allowed (0, 1s]", c.Model.ServiceTime)
	}
	if c.VIPPort < 0 || c.VIPPort > 65535 {
		return fmt.Errorf("port %d: allowed 0..65535 (0 picks a free port)", c.VIPPort)
	}
	if c.Codec != "" && c.Codec != CodecOghttp2 && c.Codec != CodecNghttp2 {
		return fmt.Errorf("http2 codec %q: allowed %s (Envoy 1.35's default), %s", c.Codec, CodecOghttp2, CodecNghttp2)
	}
	if c.Envoy != "" {
		if _, err := stacks.LookupEnvoy(c.Envoy); err != nil {
			return err
		}
	}
	if c.ClientRTT < 0 || c.ClientRTT > 10*time.Second || c.UpstreamRTT < 0 || c.UpstreamRTT > 10*time.Second {
		return fmt.Errorf("round-trip time %s (clients) / %s (upstreams): allowed [0, 10s]", c.ClientRTT, c.UpstreamRTT)
	}
	if c.ListenerDrainTime < 0 || c.ListenerDrainTime > time.Hour {
		return fmt.Errorf("listener drain time %s: allowed [0, 1h]", c.ListenerDrainTime)
	}
	if c.MemoryLimit > 0 && c.MemoryLimit < 16<<20 || c.MemoryLimit > 1<<40 {
		return fmt.Errorf("memory limit %d bytes: allowed 16Mi..1Ti, or none", c.MemoryLimit)
	}
	if c.CPULimit > 0 && (c.CPULimit < int64(stacks.MinCPU) || c.CPULimit > int64(stacks.MaxCPU)) {
		return fmt.Errorf("CPU limit %dm: allowed %s..%s cores, or none", c.CPULimit, stacks.MinCPU, stacks.MaxCPU)
	}
	if c.CPURequest < 0 || c.CPURequest > 0 && (c.CPURequest < int64(stacks.MinCPU) || c.CPURequest > int64(stacks.MaxCPU)) {
		return fmt.Errorf("CPU request %dm: allowed %s..%s cores", c.CPURequest, stacks.MinCPU, stacks.MaxCPU)
	}
	if l := c.cpuLimit(); l > 0 && c.CPURequest > l {
		return fmt.Errorf("CPU request %s is above the limit %s: Kubernetes refuses a request over its limit", stacks.CPU(c.CPURequest), stacks.CPU(l))
	}
	if c.StreamMemory < 0 || c.StreamMemory > 16<<20 {
		return fmt.Errorf("stream memory %d bytes: allowed 0..16Mi", c.StreamMemory)
	}
	if c.Model.PerKiB < 0 || c.Model.ConnCost < 0 || c.Model.PerFrame < 0 {
		return errors.New("per-KiB, per-frame and connection costs must not be negative")
	}
	return nil
}
