package emulator

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
)

// A node's ztunnel as a proxy for the mesh pods on its node (east-west traffic): each client
// pod's outbound connections are captured (ztunnel's in-pod mode opens its listeners in the
// pod's network namespace: src/inpod), the destination service's waypoint pod is picked per
// connection (model.PickEndpoint), and the connection is carried as one CONNECT stream on an
// HTTP/2 connection from ztunnel's HBONE pool (model.PickHBONE, keyed by model.HBONEKey). Its
// work is booked on its runtime's threads (model.Runtime): every read relayed costs the HBONE
// connection's task, in either direction, so a connection's bytes are relayed one piece at a
// time whatever the thread count, and a ztunnel with few threads and much traffic queues it.

// ZtunnelConfig is what a ztunnel runs with.
type ZtunnelConfig struct {
	// Workers is the runtime's worker threads (ZTUNNEL_WORKER_THREADS; 2 by default until
	// istio/ztunnel#1993).
	Workers int
	Pool    model.HBONEPoolConfig
	Cost    model.ZtunnelCost
}

// DefaultZtunnel is ztunnel's defaults before istio/ztunnel#1993: two worker threads.
var DefaultZtunnel = ZtunnelConfig{Workers: 2, Pool: model.DefaultHBONEPool, Cost: model.DefaultZtunnelCost}

// Check names a bad setting and its allowed range.
func (c ZtunnelConfig) Check() error {
	if c.Workers < 1 || c.Workers > 64 {
		return fmt.Errorf("ztunnel workers %d: allowed 1..64", c.Workers)
	}
	return c.Pool.Check()
}

// ztProxy is a ztunnel as a proxy: its outbound side for the pods on its node
// (ztunnel_outbound.go) and its inbound side for HBONE to them (ztunnel_inbound.go), one
// runtime for both as in the one ztunnel process.
type ztProxy struct {
	z     *Ztunnel
	clock *Clock
	dst   func() []hboneDst // where the destination service's connections go
	// inbound is the HBONE listener (15008) for the node's pods; backends what it may reach.
	inbound  net.Listener
	backends []string

	mu    sync.Mutex
	cfg   ZtunnelConfig
	rt    *model.Runtime
	rng   *rand.Rand
	pool  map[model.HBONEKey][]*ztHBONE
	pods  []*capturedPod
	conns atomic.Int64 // HBONE connections open
}

// capturedPod is a mesh client pod on the ztunnel's node, with its captured outbound listener.
type capturedPod struct {
	Name, IP, Identity string
	ln                 net.Listener
}

// ztHBONE is one pooled HBONE connection.
type ztHBONE struct {
	key     model.HBONEKey
	cc      *http2.ClientConn
	nc      net.Conn
	state   model.HBONEConn
	release *time.Timer
	// ready is closed once the connection is up (or failed: err); tunnels that picked it
	// while it was being dialled wait for it, as ztunnel makes one connection attempt per key
	// at a time and hands it to every request that waited (src/proxy/pool.rs).
	ready chan struct{}
	err   error
}

// hboneDst is one endpoint of the destination service as ztunnel reaches it: the pod (a
// waypoint pod, or the destination pod itself), the address it dials for it (the waypoint
// pod's 15008, or the destination node's ztunnel, which takes the pod's 15008), the address
// the CONNECT names, the pod's identity, and whether it is ready.
type hboneDst struct {
	Pod, Dial, Target, ID string
	Ready                 bool
}

func newZtProxy(z *Ztunnel, clock *Clock, cfg ZtunnelConfig, seed uint64) *ztProxy {
	return &ztProxy{z: z, clock: clock, cfg: cfg, rt: model.NewRuntime(cfg.Workers),
		rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), pool: map[model.HBONEKey][]*ztHBONE{}}
}

// capture starts intercepting a client pod's outbound connections; Addr is where the pod's
// client connects (as if to the service's address).
func (o *ztProxy) capture(name, identity string) (*capturedPod, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.z.ip, "0"))
	if err != nil {
		return nil, err
	}
	cp := &capturedPod{Name: name, IP: o.z.ip, Identity: identity, ln: ln}
	o.mu.Lock()
	o.pods = append(o.pods, cp)
	o.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.proxy(cp, c)
		}
	}()
	return cp, nil
}

// Addr is where the pod's client connects.
func (cp *capturedPod) Addr() string { return cp.ln.Addr().String() }

// reconfigure takes new settings and destinations (a scenario's): a new thread count is a
// restarted ztunnel's runtime; the pool's settings apply to the tunnels opened from now on.
func (o *ztProxy) reconfigure(cfg ZtunnelConfig, dst func() []hboneDst) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cfg.Workers != o.cfg.Workers {
		o.rt = model.NewRuntime(cfg.Workers)
	}
	o.cfg, o.dst = cfg, dst
}

// proxy carries one captured connection to an endpoint of the destination through a tunnel.
func (o *ztProxy) proxy(cp *capturedPod, c net.Conn) {
	defer c.Close()
	o.mu.Lock()
	dsts := o.dst()
	ready := make([]bool, len(dsts))
	for i, d := range dsts {
		ready[i] = d.Ready
	}
	i := model.PickEndpoint(ready, o.rng)
	o.mu.Unlock()
	if i < 0 {
		return
	}
	d := dsts[i]
	key := model.HBONEKey{SrcID: cp.Identity, SrcIP: cp.IP, DstID: d.ID, Dst: d.Pod}
	hc, err := o.checkout(key, d.Dial)
	if err != nil {
		return
	}
	defer o.checkin(hc)
	o.book(hc, o.cfg.Cost.PerTunnel)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodConnect, "http://"+d.Target, pr)
	resp, err := hc.cc.RoundTrip(req)
	if err != nil {
		pw.CloseWithError(err)
		return
	}
	defer resp.Body.Close()
	o.z.tunnels.Add(1)
	defer o.z.tunnelsClosed.Add(1)
	done := make(chan struct{})
	go func() {
		o.relay(hc, pw, c, &o.z.srcSent) // the pod's bytes into the tunnel
		pw.Close()
		close(done)
	}()
	o.relay(hc, c, resp.Body, &o.z.srcReceived) // the tunnel's bytes back to the pod
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	<-done
}

// relay copies src to dst, each read booked on the HBONE connection's task and forwarded
// when the work is done; bytes (nil: none) counts them.
func (o *ztProxy) relay(hc *ztHBONE, dst io.Writer, src io.Reader, bytes *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			o.book(hc, o.cfg.Cost.Chunk(n))
			if bytes != nil {
				bytes.Add(int64(n))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// book queues work on the runtime for the connection's task and waits until it is done.
func (o *ztProxy) book(hc *ztHBONE, d time.Duration) {
	now := time.Now()
	o.mu.Lock()
	_, end := o.rt.Book(now, hc, d)
	o.mu.Unlock()
	_ = o.clock.SleepUntil(context.Background(), end)
}

// checkout takes a stream on a pooled connection for key, dialling one (to dial) when none
// has room.
func (o *ztProxy) checkout(key model.HBONEKey, dial string) (*ztHBONE, error) {
	o.mu.Lock()
	conns := o.pool[key]
	states := make([]model.HBONEConn, len(conns))
	for i, hc := range conns {
		states[i] = hc.state
		if hc.cc != nil && !hc.cc.CanTakeNewRequest() {
			states[i].Closed = true
		}
	}
	if i := model.PickHBONE(o.cfg.Pool, states); i >= 0 {
		hc := conns[i]
		model.TakeHBONE(o.cfg.Pool, &hc.state)
		o.mu.Unlock()
		<-hc.ready
		if hc.err != nil {
			o.checkin(hc)
			return nil, hc.err
		}
		return hc, nil
	}
	hc := &ztHBONE{key: key, ready: make(chan struct{})}
	model.TakeHBONE(o.cfg.Pool, &hc.state)
	o.pool[key] = append(conns, hc)
	o.mu.Unlock()
	nc, err := net.DialTimeout("tcp", dial, 5*time.Second)
	var cc *http2.ClientConn
	if err == nil {
		o.book(hc, o.cfg.Cost.Handshake)
		cc, err = (&http2.Transport{AllowHTTP: true}).NewClientConn(nc)
	}
	o.mu.Lock()
	hc.nc, hc.cc, hc.err = nc, cc, err
	if err != nil {
		o.drop(hc)
	}
	o.mu.Unlock()
	close(hc.ready)
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		return nil, err
	}
	o.conns.Add(1)
	o.z.hboneOpened.Add(1)
	return hc, nil
}

// checkin ends a tunnel's stream; a connection left with none is released after the pool's
// unused timeout unless a tunnel takes it again.
func (o *ztProxy) checkin(hc *ztHBONE) {
	o.mu.Lock()
	defer o.mu.Unlock()
	hc.state.Streams--
	if hc.state.Streams > 0 {
		return
	}
	hc.state.IdleFrom = time.Now()
	if model.ReleaseHBONE(o.cfg.Pool, hc.state, hc.state.IdleFrom) { // retired: nothing holds it
		o.drop(hc)
		go o.closeConn(hc)
		return
	}
	after := o.cfg.Pool.UnusedRelease
	if hc.release != nil {
		hc.release.Stop()
	}
	hc.release = time.AfterFunc(after, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if model.ReleaseHBONE(o.cfg.Pool, hc.state, time.Now()) {
			o.drop(hc)
			o.closeConn(hc)
		}
	})
}

// drop takes a connection out of the pool (o.mu held).
func (o *ztProxy) drop(hc *ztHBONE) {
	hc.state.Closed = true
	conns := o.pool[hc.key]
	for i, c := range conns {
		if c == hc {
			o.pool[hc.key] = append(conns[:i:i], conns[i+1:]...)
			break
		}
	}
	if len(o.pool[hc.key]) == 0 {
		delete(o.pool, hc.key)
	}
	o.rt.Forget(hc)
}

func (o *ztProxy) closeConn(hc *ztHBONE) {
	if hc.cc != nil {
		_ = hc.cc.Close()
		o.conns.Add(-1)
		o.z.hboneClosed.Add(1)
	}
}

// Close closes every pooled connection and the captured listeners.
func (o *ztProxy) close() {
	o.mu.Lock()
	var all []*ztHBONE
	for _, conns := range o.pool {
		all = append(all, conns...)
	}
	for _, hc := range all {
		if hc.release != nil {
			hc.release.Stop()
		}
		o.drop(hc)
	}
	pods := o.pods
	o.mu.Unlock()
	for _, hc := range all {
		o.closeConn(hc)
	}
	for _, cp := range pods {
		cp.ln.Close()
	}
	if o.inbound != nil {
		o.inbound.Close()
	}
}

// threadBusy reads each runtime thread's work done.
func (o *ztProxy) threadsBusy() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rt.Busy(time.Now())
}

// Identities of the lab's destinations (SPIFFE, in the lab's namespace).
const (
	waypointIdentity = "spiffe://cluster.local/ns/igw-test/sa/waypoint"
	httpbinIdentity  = "spiffe://cluster.local/ns/igw-test/sa/httpbin"
)
