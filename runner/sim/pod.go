package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

type podRole int

const (
	roleGateway podRole = iota
	roleWaypoint
)

// The names a pod's stats carry, as Istio's gateway and waypoint listeners have them (the
// socket emulator's pods carry the same).
const (
	gatewayListener, gatewayPrefix   = "0.0.0.0_80", "outbound_0.0.0.0_80"
	waypointListener, waypointPrefix = "0.0.0.0_15008", "inbound_0.0.0.0_15008"
	// Cluster names, as Istio names them on the ingress gateway and the waypoint.
	clusterHTTPBin  = "outbound|8080||httpbin.igw-test.svc.cluster.local"
	clusterGRPC     = "outbound|9000||grpcbin.igw-test.svc.cluster.local"
	clusterWaypoint = "inbound-vip|8080|http|httpbin.igw-test.svc.cluster.local"
	// waypointStreamCap is the stream cap of the waypoint's HBONE listener (Istio's: all its
	// streams share one worker's connection).
	waypointStreamCap = 100
)

// Pod is one simulated Envoy: its workers, its stats (the model's naming), the listener in
// force, and its lifecycle in a slot of the Deployment.
type Pod struct {
	pool *Pool
	role podRole
	slot int
	Name string

	store    *model.Store
	hcm      *model.HCMStats
	srv      *model.ServerStats
	clusters map[string]*model.ClusterStats
	workers  []*worker
	quota    *model.Quota
	cfg      *model.Listener
	conns    map[*conn]struct{}
	rng      *rand.Rand
	started  int64
	// up: the container runs; ready: passed its readiness probe; terminating: SIGTERM seen;
	// exists: the slot holds a pod (a scaled-in slot does not).
	up, ready, terminating, exists bool
	backoff                        model.BackOff
	restarts                       int
}

// worker is one Envoy worker thread: the model's single server, and its stats.
type worker struct {
	pod    *Pod
	id     int
	q      *model.WorkerQ
	st     *model.WorkerStats
	active int64 // connections pinned here
}

const podLetters = "bcdfghjklmnpqrstvwxz2456789"

// newPod names a pod like a Deployment's pod.
func (p *Pool) newPod(role podRole, slot int) *Pod {
	suffix := make([]byte, 5)
	for j := range suffix {
		suffix[j] = podLetters[p.rng.IntN(len(podLetters))]
	}
	deploy, rs := "istio-ingressgateway", "5d8f7c9b6d"
	if role == roleWaypoint {
		deploy, rs = "igw-test-waypoint", "6b9f8d7c5f"
	}
	return &Pod{pool: p, role: role, slot: slot, Name: fmt.Sprintf("%s-%s-%s", deploy, rs, suffix),
		rng: rand.New(rand.NewPCG(p.rng.Uint64(), uint64(slot)))}
}

func (pod *Pod) listenerAddr() string {
	if pod.role == roleWaypoint {
		return waypointListener
	}
	return gatewayListener
}

func (pod *Pod) prefix() string {
	if pod.role == roleWaypoint {
		return waypointPrefix
	}
	return gatewayPrefix
}

// start gives the slot a fresh Envoy (a new pod, or a restarted container): stats from zero,
// idle workers, the listener cfg.
func (pod *Pod) start(cfg *model.Listener) {
	p := pod.pool
	workers := p.cfg.Workers
	if pod.role == roleWaypoint {
		workers = p.cfg.WaypointWorkers
	}
	pod.store = model.NewStore()
	pod.hcm = model.NewHCMStats(pod.store, pod.prefix(), pod.listenerAddr())
	pod.srv = model.NewServerStats(pod.store, workers)
	pod.srv.Live.Set(1)
	now := p.Sim.Now()
	pod.started = p.Sim.Tick()
	pod.srv.Uptime.SetRead(func() int64 { return (p.Sim.Tick() - pod.started) / int64(time.Second) })
	pod.quota = nil
	if pod.role == roleGateway {
		pod.quota = model.NewQuota(p.cpuLimitOf(p.cfg), p.cpuRequestOf(p.cfg), now)
	}
	pod.workers = nil
	for i := 0; i < workers; i++ {
		w := &worker{pod: pod, id: i, q: model.NewWorkerQ(pod.quota)}
		w.st = model.NewWorkerStats(pod.store, pod.listenerAddr(), i, func() int64 { return int64(w.q.Busy(p.Sim.Now())) })
		model.WatchLoop(pod.store, i, w.q, now, p.cfg.DispatcherStats, p.Sim.Now, nil)
		pod.workers = append(pod.workers, w)
	}
	pod.clusters = map[string]*model.ClusterStats{}
	if pod.role == roleGateway {
		pod.clusters[clusterHTTPBin] = model.NewClusterStats(pod.store, clusterHTTPBin)
		pod.clusters[clusterGRPC] = model.NewClusterStats(pod.store, clusterGRPC)
	} else {
		pod.clusters[clusterWaypoint] = model.NewClusterStats(pod.store, clusterWaypoint)
	}
	if pod.role == roleWaypoint {
		c := *cfg
		c.MaxConcurrentStreams = waypointStreamCap
		cfg = &c
	}
	pod.cfg = cfg
	pod.conns = map[*conn]struct{}{}
	pod.up, pod.exists, pod.terminating = true, true, false
}

// Serving reports whether the Service sends the pod new connections: it runs, has passed its
// readiness probe and is not terminating.
func (pod *Pod) Serving() bool { return pod.exists && pod.up && pod.ready && !pod.terminating }

// Exists reports whether the slot holds a pod.
func (pod *Pod) Exists() bool { return pod.exists }

// Store is the pod's stats.
func (pod *Pod) Store() *model.Store { return pod.store }

// Workers is how many workers the pod runs.
func (pod *Pod) Workers() int { return len(pod.workers) }

// accept pins a new connection to a worker, as the pod's listener does (model.PickWorker: the
// L4 balancer handed it over, so it did not pass the kernel's reuse_port selection), books the
// worker's connection setup and counts it.
func (pod *Pod) accept(c *conn) {
	cfg := pod.cfg
	active := make([]int64, len(pod.workers))
	for i, w := range pod.workers {
		active[i] = w.active
	}
	w := pod.workers[model.PickWorker(model.Accept{Exact: cfg.ExactBalance, ReusePort: cfg.ReusePort, Socket: -1, Peer: c.peer}, active, pod.rng)]
	w.active++
	c.pod, c.w, c.cfg = pod, w, cfg
	w.q.Book(pod.pool.Sim.Now(), nil, pod.pool.cfg.Cost.ConnCost, nil)
	for _, s := range []*model.Stat{pod.hcm.CxTotal, pod.hcm.LCxTotal, w.st.CxTotal, pod.hcm.CxActive, pod.hcm.LCxActive, w.st.CxActive,
		pod.hcm.CxHTTP2Total, pod.hcm.CxHTTP2Active} {
		s.Inc()
	}
	pod.conns[c] = struct{}{}
	c.armTimers()
}

// apply installs a new listener. As an Envoy listener update under Istio (which runs Envoy with
// --drain-strategy immediate), the connections accepted under the old one drain: each starts
// its drain sequence at its next response (downstream_cx_drain_close), and those still open
// when the listener drain time ends are closed. A change inside the filter chain is an in-place
// update; a change to the listener itself replaces the listener.
func (pod *Pod) apply(cfg *model.Listener, changed bool) {
	old := pod.cfg
	pod.cfg = cfg
	if !changed {
		return
	}
	pod.srv.ListenerModified.Inc()
	draining := pod.srv.FilterChainsDraining
	if old != nil && old.ListenerLevelDiffers(cfg) {
		draining = pod.srv.ListenersDraining
	} else {
		pod.srv.ListenerInPlace.Inc()
	}
	var conns []*conn
	for c := range pod.conns {
		c.listenerDraining = true
		conns = append(conns, c)
	}
	draining.Inc()
	pod.pool.Sim.After(pod.pool.cfg.ListenerDrainTime, func() {
		for _, c := range conns {
			c.closeByUs("listener drained")
		}
		draining.Dec()
	})
}

// stop ends the Envoy abruptly, as a killed container: every connection reset.
func (pod *Pod) stop() {
	pod.up = false
	pod.srv.Live.Set(0)
	for c := range pod.conns {
		c.closeByUs("killed")
	}
	pod.pool.closeUpstreams(pod)
}

// OpenConnections counts the pod's open downstream connections.
func (pod *Pod) OpenConnections() int { return len(pod.conns) }

// busy is the pod's workers' busy time so far.
func (pod *Pod) busy() time.Duration {
	var d time.Duration
	for _, w := range pod.workers {
		d += w.q.Busy(pod.pool.Sim.Now())
	}
	return d
}

// cluster is the upstream cluster a request goes to: the gRPC backend's or httpbin's on the
// gateway (Istio's outbound clusters), the waypoint's inbound one on a waypoint.
func (pod *Pod) cluster(grpc bool) *model.ClusterStats {
	switch {
	case pod.role == roleWaypoint:
		return pod.clusters[clusterWaypoint]
	case grpc:
		return pod.clusters[clusterGRPC]
	}
	return pod.clusters[clusterHTTPBin]
}
