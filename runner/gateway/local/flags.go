package local

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/stacks"
)

// LocalDrainTime is the local target's listener drain time: Istio's 45 s default would add
// most of a minute to every scenario switch, and the drain has nothing to drain there (each
// scenario's clients close their connections when they finish), so the local target uses
// one second and says so with each scenario.
const LocalDrainTime = time.Second

// PoolFlags are the emulated pool's sizing flags, shared by suite and serve. Their values
// are checked here as well as by the emulator, so that an error names the flag the user typed.
type PoolFlags struct {
	pods, concurrency, waypointPods, waypointWorkers int
	serviceTime, perKiB, connCost, drainTime         time.Duration
	balance, codec, envoy                            string
	seed                                             uint64
	tls, dispatcherStats                             bool
	rtt, clientRTT, upstreamRTT                      time.Duration
	memoryLimit, streamMemory                        string
	cpuLimit, cpuRequest                             string
	// concurrencyList is --concurrency given as a list, where the command takes one
	// (AllowConcurrencyList): the values a sweep runs.
	concurrencyList, listHelp string
	perFrame                  time.Duration
	fs                        *pflag.FlagSet
}

// MaxRTT bounds --rtt and its per-tier flags: a round trip longer than a second is no
// network a gateway pool sits on, and would only stretch every scenario.
const MaxRTT = time.Second

// Register adds the flags to fs.
func (p *PoolFlags) Register(fs *pflag.FlagSet) {
	p.fs = fs
	d := emulator.DefaultModel
	fs.IntVar(&p.pods, "pods", 6, "gateway pods (1..64; up to 1000 on --target sim)")
	p.concurrency = 1
	fs.Var(&workersFlag{p: p}, "concurrency", "Envoy workers per gateway pod (1..64)")
	fs.IntVar(&p.waypointPods, "waypoint-pods", 3, "waypoint pods for scenarios 06 and 07 (0..32)")
	fs.IntVar(&p.waypointWorkers, "waypoint-concurrency", 2, "workers per waypoint pod (1..64)")
	fs.DurationVar(&p.serviceTime, "service-time", d.ServiceTime, "emulated worker time per request (sets one worker's capacity)")
	fs.DurationVar(&p.perKiB, "per-kib", d.PerKiB, "emulated worker time per KiB of response body")
	fs.DurationVar(&p.connCost, "conn-cost", d.ConnCost, "emulated worker time to accept a connection")
	fs.DurationVar(&p.perFrame, "per-frame", d.PerFrame, "emulated worker time per message a stream carries after its first (a request DATA frame, an upstream read after a pause): what a long-lived stream costs")
	fs.StringVar(&p.balance, "balance", emulator.BalanceRandom, "L4 balancer in front of the pods: random (kube-proxy), round-robin, source-hash")
	fs.Uint64Var(&p.seed, "seed", 0, "seed for pod placement (0 = random each run)")
	fs.DurationVar(&p.drainTime, "drain-time", LocalDrainTime, "how long a replaced listener's connections may drain before they are closed (Envoy's --drain-time-s; Istio's default is 45s)")
	fs.StringVar(&p.codec, "http2-codec", "", "Envoy's downstream HTTP/2 library: oghttp2 or nghttp2 (default: the one the --envoy-defaults release runs: oghttp2 in 1.35 and 1.36, nghttp2 from 1.37)")
	fs.DurationVar(&p.rtt, "rtt", 0, "round-trip time on both tiers, clients-gateway and gateway-upstream: every byte is delayed half of it each way (0..1s; 0: loopback's)")
	fs.DurationVar(&p.clientRTT, "client-rtt", 0, "round-trip time between the clients and the gateway pods only, overriding --rtt for that tier (0..1s)")
	fs.DurationVar(&p.upstreamRTT, "upstream-rtt", 0, "round-trip time between the gateway pods and their upstreams only, overriding --rtt for that tier (0..1s)")
	fs.StringVar(&p.envoy, "envoy-defaults", stacks.DefaultEnvoy, "the Envoy release whose defaults the pods run with for knobs a scenario leaves unset: "+envoyChoices()+"; 1.36 caps streams at 1024 and shrinks the HTTP/2 windows to 16 MiB / 24 MiB")
	fs.BoolVar(&p.tls, "tls", false, "terminate TLS on the gateway (listener 0.0.0.0_443): every new connection costs its worker a handshake")
	fs.StringVar(&p.memoryLimit, "memory-limit", Quantity(emulator.DefaultMemoryLimit), "each gateway pod's container memory limit (16Mi..1Ti, or none): past it the pod is OOM-killed and restarted, as Kubernetes does (the Istio gateway chart's default)")
	fs.StringVar(&p.cpuLimit, "cpu-limit", "", "each gateway pod's container CPU limit (cores such as 2, or 1500m; 0.1..64, or none), enforced as the kernel's CFS quota per 100 ms period; default: one core per worker, as the lab sets it")
	fs.StringVar(&p.cpuRequest, "cpu-request", "", "each gateway pod's container CPU request (0.1..64, at most the limit); default: the limit")
	fs.BoolVar(&p.dispatcherStats, "dispatcher-stats", false, "the bootstrap's enable_dispatcher_stats: each worker's event-loop histograms (listener_manager.worker_<id>.dispatcher.loop_duration_us, poll_delay_us); off by default, as Istio leaves it")
	fs.StringVar(&p.streamMemory, "stream-memory", Quantity(emulator.DefaultStreamMemory), "what each stream a gateway pod holds counts against its limit, besides its headers and buffers (1Ki..16Mi; an estimate: Envoy publishes none)")
}

// AllowConcurrencyList lets --concurrency take a list (a,b,c or lo..hixF) besides one count,
// for a command that sweeps it; the list is ConcurrencyList's, and help says what it does.
func (p *PoolFlags) AllowConcurrencyList(help string) {
	p.listHelp = help
	if f := p.fs.Lookup("concurrency"); f != nil {
		f.Usage += "; " + help
	}
}

// ConcurrencyList is --concurrency as given when it was a list ("" otherwise).
func (p *PoolFlags) ConcurrencyList() string { return p.concurrencyList }

// workersFlag is --concurrency: one worker count, or a list where the command takes one.
type workersFlag struct{ p *PoolFlags }

func (w *workersFlag) String() string {
	if w.p.concurrencyList != "" {
		return w.p.concurrencyList
	}
	return fmt.Sprint(w.p.concurrency)
}

func (w *workersFlag) Set(v string) error {
	if w.p.listHelp != "" && strings.ContainsAny(v, ",.") {
		w.p.concurrencyList = v
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a whole number of workers", v)
	}
	w.p.concurrency, w.p.concurrencyList = n, ""
	return nil
}

func (w *workersFlag) Type() string {
	if w.p.listHelp != "" {
		return "workers"
	}
	return "int"
}

// Quantity writes bytes as Kubernetes writes a memory quantity (1Gi, 512Mi, 16Ki).
func Quantity(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprint(n)
}

// ParseQuantity reads a memory quantity: bytes, or a number with Ki, Mi, Gi or Ti.
func ParseQuantity(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		s string
		v int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}} {
		if strings.HasSuffix(s, u.s) {
			s, mult = strings.TrimSuffix(s, u.s), u.v
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || fmt.Sprint(n) != s || n < 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("%q is not a memory quantity (bytes, or a number with Ki, Mi, Gi, Ti)", s)
	}
	return n * mult, nil
}

// Config is the pool the flags describe, or an error naming the flag and its allowed range.
func (p *PoolFlags) Config() (emulator.Config, error) {
	return p.ConfigWithin(emulator.MaxPods, emulator.MaxWorkers)
}

// ConfigWithin is Config for a kind of target whose pools may hold up to maxPods pods of
// maxWorkers workers (gateway.Driver's MaxPods, MaxWorkers; 0: the socket emulator's).
func (p *PoolFlags) ConfigWithin(maxPods, maxWorkers int) (emulator.Config, error) {
	if maxPods == 0 {
		maxPods = emulator.MaxPods
	}
	if maxWorkers == 0 {
		maxWorkers = emulator.MaxWorkers
	}
	c := emulator.Config{Pods: p.pods, Workers: p.concurrency, WaypointPods: p.waypointPods,
		WaypointWorkers: p.waypointWorkers, Balance: p.balance, Seed: p.seed, TLS: p.tls, DispatcherStats: p.dispatcherStats,
		ListenerDrainTime: p.drainTime, Codec: p.codec, Envoy: p.envoy,
		Model: emulator.Model{ServiceTime: p.serviceTime, PerKiB: p.perKiB, ConnCost: p.connCost, PerFrame: p.perFrame}}
	for _, f := range []struct {
		flag      string
		v, lo, hi int
	}{
		{"--pods", p.pods, 1, maxPods}, {"--concurrency", p.concurrency, 1, maxWorkers},
		{"--waypoint-pods", p.waypointPods, 0, 32}, {"--waypoint-concurrency", p.waypointWorkers, 1, 64},
	} {
		if f.v < f.lo || f.v > f.hi {
			return c, fmt.Errorf("%s %d: allowed %d..%d", f.flag, f.v, f.lo, f.hi)
		}
	}
	if p.serviceTime <= 0 || p.serviceTime > time.Second {
		return c, fmt.Errorf("--service-time %s: allowed (0, 1s]", p.serviceTime)
	}
	if p.perKiB < 0 || p.perKiB > time.Second {
		return c, fmt.Errorf("--per-kib %s: allowed 0..1s", p.perKiB)
	}
	if p.connCost < 0 || p.connCost > time.Second {
		return c, fmt.Errorf("--conn-cost %s: allowed 0..1s", p.connCost)
	}
	if p.perFrame < 0 || p.perFrame > time.Second {
		return c, fmt.Errorf("--per-frame %s: allowed 0..1s", p.perFrame)
	}
	var err error
	if c.CPULimit, err = cpuFlag("--cpu-limit", p.cpuLimit, true); err != nil {
		return c, err
	}
	if c.CPURequest, err = cpuFlag("--cpu-request", p.cpuRequest, false); err != nil {
		return c, err
	}
	if c.CPULimit > 0 && c.CPURequest > c.CPULimit {
		return c, fmt.Errorf("--cpu-request %s is above --cpu-limit %s: Kubernetes refuses a request over its limit", p.cpuRequest, p.cpuLimit)
	}
	if p.drainTime <= 0 || p.drainTime > time.Hour {
		return c, fmt.Errorf("--drain-time %s: allowed (0, 1h]", p.drainTime)
	}
	c.ClientRTT, c.UpstreamRTT = p.rtt, p.rtt
	for _, f := range []struct {
		flag string
		v    time.Duration
		tier *time.Duration
	}{{"rtt", p.rtt, nil}, {"client-rtt", p.clientRTT, &c.ClientRTT}, {"upstream-rtt", p.upstreamRTT, &c.UpstreamRTT}} {
		if f.v < 0 || f.v > MaxRTT {
			return c, fmt.Errorf("--%s %s: allowed 0..%s", f.flag, f.v, MaxRTT)
		}
		if f.tier != nil && p.fs != nil && p.fs.Changed(f.flag) {
			*f.tier = f.v
		}
	}
	if strings.EqualFold(p.memoryLimit, "none") {
		c.MemoryLimit = -1
	} else if n, err := ParseQuantity(p.memoryLimit); err != nil || n < 16<<20 || n > 1<<40 {
		return c, fmt.Errorf("--memory-limit %q: allowed 16Mi..1Ti, or none", p.memoryLimit)
	} else {
		c.MemoryLimit = n
	}
	if n, err := ParseQuantity(p.streamMemory); err != nil || n < 1<<10 || n > 16<<20 {
		return c, fmt.Errorf("--stream-memory %q: allowed 1Ki..16Mi", p.streamMemory)
	} else {
		c.StreamMemory = n
	}
	rel, err := stacks.LookupEnvoy(p.envoy)
	if err != nil {
		return c, fmt.Errorf("--envoy-defaults %q: allowed %s", p.envoy, envoyChoices())
	}
	switch p.codec {
	case "":
		c.Codec = rel.Codec
	case emulator.CodecOghttp2, emulator.CodecNghttp2:
	default:
		return c, fmt.Errorf("--http2-codec %q: allowed %s, %s (unset: Envoy %s's, %s)", p.codec, emulator.CodecOghttp2, emulator.CodecNghttp2, rel.Envoy, rel.Codec)
	}
	if err := c.CheckWithin(maxPods, maxWorkers); err != nil {
		return c, err
	}
	switch p.balance {
	case emulator.BalanceRandom, emulator.BalanceRoundRobin, emulator.BalanceSourceHash:
	default:
		return c, fmt.Errorf("--balance %q: allowed random, round-robin, source-hash", p.balance)
	}
	return c, nil
}

// cpuFlag reads a CPU flag in millicores: "" is 0 (the default), "none" -1 where allowed.
func cpuFlag(flag, v string, noneOK bool) (int64, error) {
	allowed := fmt.Sprintf("allowed %s..%s cores (2, 0.5 or 1500m)", stacks.MinCPU, stacks.MaxCPU)
	if noneOK {
		allowed += ", or none"
	}
	switch {
	case v == "":
		return 0, nil
	case noneOK && strings.EqualFold(v, "none"):
		return -1, nil
	}
	c, err := stacks.ParseCPU(v)
	if err != nil || c < stacks.MinCPU || c > stacks.MaxCPU {
		return 0, fmt.Errorf("%s %q: %s", flag, v, allowed)
	}
	return int64(c), nil
}

// envoyChoices lists the Envoy releases --envoy-defaults takes, with the Istio that ships each.
func envoyChoices() string {
	var out []string
	for _, r := range stacks.EnvoyReleases {
		out = append(out, fmt.Sprintf("%s (Istio %s)", r.Envoy, r.Istio))
	}
	return strings.Join(out, ", ")
}
