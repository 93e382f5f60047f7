package emulator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

type podRole int

const (
	roleGateway podRole = iota
	roleWaypoint
)

// Pod is one emulated gateway (or waypoint) pod: an h2c listener on its own loopback address
// with one socket per worker, its workers, its upstream clusters, its stats and its admin port.
type Pod struct {
	pool  *Pool
	role  podRole
	Index int
	// Name is the pod name the stats and results use (e.g. istio-ingressgateway-5d8f7c9b6d-x7k2p).
	Name string
	ip   string

	listenerAddr string // Envoy's listener name, e.g. 0.0.0.0_80
	hcmPrefix    string // the HCM stat prefix, e.g. outbound_0.0.0.0_80
	mcsCap       uint32 // a fixed stream cap for listeners Istio configures itself (waypoint HBONE: 100)

	store    *Store
	mem      *podMemory
	quota    *cpuQuota    // the container's CPU limit (cfs.go); nil: none
	model    Model        // the work its workers do, fixed for the process (Resize changes it)
	backoff  crashBackOff // the kubelet's, across the container's restarts
	hcm      *hcm
	workers  []*Worker
	clusters map[string]*cluster
	cfg      atomic.Pointer[listenerConfig]
	started  time.Time

	mu          sync.Mutex
	lns         []net.Listener
	port        int
	conns       map[*serverConn]struct{}
	up          bool
	ready       bool // in the Service's endpoints (its readiness probe passed)
	terminating bool // SIGTERM received: draining, out of the endpoints
	absent      bool // no pod in this slot (scaled in, or replaced by a rollout)
	admin       *adminServer
	// hboneLns, hboneAddr and hboneStats are a waypoint pod's HBONE listener (hbone_server.go).
	hboneLns   []net.Listener
	hboneAddr  string
	hboneStats *model.HCMStats
	adminPort  int
	rng        *rand.Rand

	*model.ServerStats
	sslHandshakes, sslErrors *Stat
}

// Addr is the pod's data address (ip:port), or "" while it is down.
func (p *Pod) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return ""
	}
	return net.JoinHostPort(p.ip, strconv.Itoa(p.port))
}

// AdminURL is the base URL of the pod's admin endpoint.
func (p *Pod) AdminURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "http://" + net.JoinHostPort(p.ip, strconv.Itoa(p.adminPort))
}

// Up reports whether the pod is serving.
func (p *Pod) Up() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// Workers returns the pod's workers.
func (p *Pod) Workers() []*Worker { return p.workers }

// Store returns the pod's stats.
func (p *Pod) Store() *Store { return p.store }

// build creates a fresh process state: stats, workers, clusters. A restarted pod gets a new
// one, so its counters start from zero as a restarted Envoy's do.
func (p *Pod) build(cfg *listenerConfig) {
	pl := p.pool
	p.store = NewStore()
	p.mem = newPodMemory(p, pl.cfg.memoryLimit())
	p.workers = nil
	workers := pl.cfg.Workers
	if p.role == roleWaypoint {
		workers = pl.cfg.WaypointWorkers
	}
	p.quota, p.model = nil, pl.cfg.Model
	if p.role == roleGateway {
		p.quota = newCPUQuota(pl.cfg.cpuLimit(), pl.cfg.cpuRequest())
	}
	for i := 0; i < workers; i++ {
		p.workers = append(p.workers, newWorker(i, pl.clock, p.quota, p.store, p.listenerAddr, pl.cfg.DispatcherStats))
	}
	p.hcm = newHCM(p)
	p.clusters = map[string]*cluster{}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	from := &net.TCPAddr{IP: net.ParseIP(p.ip)}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if ml := pl.backends.mem[addr]; ml != nil {
			c, err = ml.dial(ctx, from)
		} else {
			c, err = dialer.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		return withRTT(c, pl.cfg.UpstreamRTT, pl.clock), nil
	}
	// Without an upstream round trip to carry, the hop to go-httpbin stays in the process
	// (upstream_local.go).
	var local func(string) *localReplica
	if pl.cfg.UpstreamRTT == 0 && !pl.cfg.upstreamOverConns {
		local = pl.backends.localReplica
	}
	src := from.String()
	if p.role == roleGateway {
		p.clusters[ClusterHTTPBin] = newCluster(p.store, ClusterHTTPBin, pl.backends.HTTPBin, false, workers, dial, local, src)
		p.clusters[ClusterGRPC] = newCluster(p.store, ClusterGRPC, []string{pl.backends.GRPC}, true, workers, dial, nil, src)
		if pl.waypointVIP != nil {
			p.clusters[clusterViaWaypoint] = newCluster(p.store, ClusterHTTPBin, []string{pl.waypointVIP.Addr()}, true, workers, dial, nil, src)
		}
	} else {
		p.clusters[ClusterHTTPBin] = newCluster(p.store, waypointInboundCluster, pl.backends.HTTPBin, false, workers, dial, local, src)
	}
	p.ServerStats = model.NewServerStats(p.store, workers)
	p.MemoryAllocated.SetRead(p.mem.Used)
	started := time.Now()
	p.Uptime.SetRead(func() int64 { return int64(time.Since(started) / time.Second) })
	if pl.tls != nil && p.role == roleGateway {
		p.sslHandshakes = listenerStat(p.store, Counter, p.listenerAddr, "ssl.handshake")
		p.sslErrors = listenerStat(p.store, Counter, p.listenerAddr, "ssl.connection_error")
	}
	p.conns = map[*serverConn]struct{}{}
	p.cfg.Store(cfg)
	p.started = time.Now()
}

// Cluster names, as Istio names them on the ingress gateway and the waypoint.
const (
	ClusterHTTPBin         = "outbound|8080||httpbin.igw-test.svc.cluster.local"
	ClusterGRPC            = "outbound|9000||grpcbin.igw-test.svc.cluster.local"
	waypointInboundCluster = "inbound-vip|8080|http|httpbin.igw-test.svc.cluster.local"
	clusterViaWaypoint     = "via-waypoint"
)

// route picks the cluster for a request, as the lab's routes do: the gRPC host (or any gRPC
// call) to grpcbin, everything else to httpbin, through the waypoint when it is on.
func (p *Pod) route(st *stream, cfg *listenerConfig) *cluster {
	if p.role == roleWaypoint {
		return p.clusters[ClusterHTTPBin]
	}
	host, _, _ := strings.Cut(st.authority, ":")
	if strings.HasPrefix(host, "grpcbin") || strings.HasPrefix(st.header.Get("Content-Type"), "application/grpc") {
		return p.clusters[ClusterGRPC]
	}
	if cfg.Waypoint {
		if c := p.clusters[clusterViaWaypoint]; c != nil {
			return c
		}
	}
	return p.clusters[ClusterHTTPBin]
}

// listen opens one SO_REUSEPORT socket per worker on the pod's address, on port (0 picks one).
func (p *Pod) listen(port int) error {
	lc := net.ListenConfig{Control: reusePortControl}
	var lns []net.Listener
	for i := range p.workers {
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("pod %s worker %d: listen on %s: %w", p.Name, i, p.ip, err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		lns = append(lns, ln)
	}
	p.mu.Lock()
	p.lns, p.port, p.up = lns, port, true
	p.mu.Unlock()
	p.Live.Set(1)
	for i, ln := range lns {
		go p.acceptLoop(i, ln)
	}
	return nil
}

func (p *Pod) acceptLoop(socket int, ln net.Listener) {
	acceptEach(ln, func(c net.Conn) { p.accept(c, socket) })
}

// acceptEach serves each connection ln accepts on its own goroutine until ln is closed; a
// failed accept (out of file descriptors, say) is retried after a pause.
func acceptEach(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go serve(c)
	}
}

// accept serves a connection that arrived on a worker's socket (socket >= 0), or that the L4
// balancer handed over directly (socket < 0, like a DNAT'd connection arriving at the pod).
func (p *Pod) accept(c net.Conn, socket int) {
	p.serveConn(p.assign(socket, c.RemoteAddr()), c)
}

// assign picks the worker for a connection the kernel handed to socket's worker and counts the
// connection on it: the same worker (SO_REUSEPORT hashing), the least loaded one
// (exact_balance), or any waiting worker when reuse_port is off and all workers accept from one
// socket. A connection handed over by the balancer did not pass the kernel's SO_REUSEPORT
// selection, so it gets the same kind of choice: a hash of its peer address.
//
// Under exact_balance the pick and the count happen under one lock, as in Envoy's
// ExactConnectionBalancerImpl::pickTargetHandler (which calls incNumConnections on the handler
// it picked before releasing its mutex): connections that arrive together see each other's
// counts and spread evenly.
func (p *Pod) assign(socket int, peer net.Addr) *Worker {
	cfg := p.cfg.Load()
	if !kernelHashesReusePort {
		socket = -1
	}
	// The pick and the count under one lock (exact_balance needs it; the rest are cheap).
	p.mu.Lock()
	defer p.mu.Unlock()
	active := make([]int64, len(p.workers))
	for i, w := range p.workers {
		active[i] = w.active.Load()
	}
	w := p.workers[model.PickWorker(model.Accept{Exact: cfg.ExactBalance, ReusePort: cfg.ReusePort, Socket: socket, Peer: peer.String()}, active, p.rng)]
	w.active.Add(1)
	return w
}

// serveConn serves a connection already counted on worker w; a connection that never gets to
// HTTP/2 (a failed TLS handshake, a pod going down) is uncounted.
func (p *Pod) serveConn(w *Worker, c net.Conn) {
	cfg := p.cfg.Load()
	if p.mcsCap > 0 && cfg.MaxConcurrentStreams > p.mcsCap {
		cp := *cfg
		cp.MaxConcurrentStreams = p.mcsCap
		cfg = &cp
	}
	w.Book(nil, p.model.ConnCost)
	if t := p.pool.tls; t != nil && p.role == roleGateway {
		// The handshake runs on the connection's worker, like everything else about it.
		_ = w.Serve(context.Background(), nil, t.cost)
		tc := tls.Server(c, t.cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			p.sslErrors.Inc()
			w.active.Add(-1)
			c.Close()
			return
		}
		p.sslHandshakes.Inc()
		c = tc
	}
	sc := newServerConn(p.hcm, w, cfg, c)
	p.mu.Lock()
	if !p.up {
		p.mu.Unlock()
		w.active.Add(-1)
		c.Close()
		return
	}
	p.conns[sc] = struct{}{}
	p.mu.Unlock()
	sc.mem.add(connMemory)
	p.hcm.connOpened(sc)
	sc.serve()
}

func (p *Pod) forget(sc *serverConn) {
	p.mu.Lock()
	delete(p.conns, sc)
	p.mu.Unlock()
}

// apply installs a new configuration. Like an Envoy listener update under Istio, which runs
// Envoy with --drain-strategy immediate, the connections accepted under the old configuration
// drain: each starts its drain sequence at its next response (counted in
// downstream_cx_drain_close), and those still open when drainTime ends are closed. A change
// inside the filter chain (the connection manager's settings, its filters, its routes) is an
// in-place filter chain update (ListenerManagerImpl::drainFilterChains); a change to the
// listener itself (buffer limit, balancing, reuse_port) replaces the listener (drainListener).
// It returns how many connections were open.
func (p *Pod) apply(cfg *listenerConfig, changed bool, drainTime time.Duration) int {
	old := p.cfg.Swap(cfg)
	if !changed {
		return 0
	}
	p.ListenerModified.Inc()
	p.mu.Lock()
	conns := p.connsLocked()
	draining := p.FilterChainsDraining
	if old != nil && old.ListenerLevelDiffers(cfg) {
		draining = p.ListenersDraining
	} else {
		p.ListenerInPlace.Inc()
	}
	p.mu.Unlock()
	for _, sc := range conns {
		sc.listenerDraining.Store(true)
	}
	draining.Inc()
	time.AfterFunc(drainTime, func() {
		for _, sc := range conns {
			sc.closeWithListener()
		}
		draining.Dec()
	})
	return len(conns)
}

// connsLocked lists the pod's open downstream connections; p.mu must be held.
func (p *Pod) connsLocked() []*serverConn {
	return slices.Collect(maps.Keys(p.conns))
}

// OpenConnections counts the pod's open downstream connections.
func (p *Pod) OpenConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// stop closes the listeners and every connection abruptly, as a killed pod does.
func (p *Pod) stop() {
	p.mu.Lock()
	p.up = false
	lns := p.lns
	p.lns = nil
	conns := p.connsLocked()
	p.mu.Unlock()
	for _, ln := range append(lns, p.hboneLns...) {
		ln.Close()
	}
	for _, sc := range conns {
		sc.closeByUs("killed")
	}
	if p.Live != nil {
		p.Live.Set(0)
	}
	for _, c := range p.clusters {
		for _, up := range c.pools {
			up.close()
		}
	}
}
