package emulator

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
)

// The waypoint's HBONE side, as Istio configures it (pilot/pkg/networking/core/
// listener_waypoint.go): a listener on 15008 (connect_terminate) whose connection manager
// accepts CONNECT (allow_connect, stat prefix connect_terminate) with at most 100 streams a
// connection, "All streams are bound to the same worker" as its comment says, and balances
// its connections exactly over the workers (assignExact); each CONNECT
// stream's bytes go on to the main_internal listener, an internal listener on the same worker
// (Envoy's internal listeners hand a connection to the worker that made it), where the waypoint's
// own connection manager serves the client's requests. So a tunnel is served by the worker of
// the HBONE connection it came in on, and the worker counters of the listener count HBONE
// connections.

// hboneMaxStreams is the connect_terminate listener's max_concurrent_streams.
const hboneMaxStreams = 100

// hboneConn is one HBONE connection accepted by a waypoint pod, pinned to a worker.
type hboneConn struct {
	pod *Pod
	w   *Worker
	nc  net.Conn
}

// listenHBONE opens the pod's HBONE listener: one SO_REUSEPORT socket per worker, as the pod's
// other listener.
func (p *Pod) listenHBONE() error {
	lc := net.ListenConfig{Control: reusePortControl}
	port := 0
	for range p.workers {
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
		if err != nil {
			for _, l := range p.hboneLns {
				l.Close()
			}
			return err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		p.hboneLns = append(p.hboneLns, ln)
	}
	p.hboneAddr = net.JoinHostPort(p.ip, strconv.Itoa(port))
	p.hboneStats = model.NewHCMStats(p.store, "connect_terminate", p.listenerAddr)
	for _, ln := range p.hboneLns {
		go acceptEach(ln, func(c net.Conn) { p.serveHBONE(p.assignExact(), c) })
	}
	return nil
}

// assignExact places an HBONE connection on the worker with the fewest, as Istio configures
// the waypoint's HBONE listener (buildConnectTerminateListener: ConnectionBalanceConfig
// ExactBalance, since istio/istio#52906: Envoy's default put four HBONE connections 4:0 on two
// workers), whatever the scenario's knobs say of the pod's own listener.
func (p *Pod) assignExact() *Worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	active := make([]int64, len(p.workers))
	for i, w := range p.workers {
		active[i] = w.active.Load()
	}
	w := p.workers[model.PickWorker(model.Accept{Exact: true}, active, p.rng)]
	w.active.Add(1)
	return w
}

// HBONEAddr is where the waypoint pod takes HBONE connections ("" without the listener).
func (p *Pod) HBONEAddr() string { return p.hboneAddr }

// serveHBONE serves one HBONE connection on worker w (already counted on it).
func (p *Pod) serveHBONE(w *Worker, c net.Conn) {
	hc := &hboneConn{pod: p, w: w, nc: c}
	w.Book(nil, p.model.ConnCost)
	st := p.hboneStats
	for _, s := range []*Stat{st.CxTotal, st.LCxTotal, w.CxTotal, st.CxActive, st.LCxActive, w.CxActive} {
		s.Inc()
	}
	srv := &http2.Server{MaxConcurrentStreams: hboneMaxStreams, IdleTimeout: 0}
	srv.ServeConn(c, &http2.ServeConnOpts{Handler: http.HandlerFunc(hc.connect)})
	for _, s := range []*Stat{st.CxActive, st.LCxActive, w.CxActive} {
		s.Dec()
	}
	st.CxDestroy.Inc()
	w.active.Add(-1)
}

// connect terminates one CONNECT stream and serves its bytes as a connection on the worker.
func (hc *hboneConn) connect(rw http.ResponseWriter, r *http.Request) {
	st := hc.pod.hboneStats
	st.RqTotal.Inc()
	st.RqHTTP2.Inc()
	if r.Method != http.MethodConnect {
		st.Rq4xx.Inc()
		http.Error(rw, "HBONE takes CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	st.RqActive.Inc()
	defer st.RqActive.Dec()
	rw.WriteHeader(http.StatusOK)
	st.Rq2xx.Inc()
	rc := http.NewResponseController(rw)
	if err := rc.Flush(); err != nil {
		return
	}
	tc := newTunnelConn(r.Body, rw, rc, hc.nc)
	hc.w.Book(nil, hc.pod.model.ConnCost)
	sc := newServerConn(hc.pod.hcm, hc.w, hc.pod.cfg.Load(), tc)
	sc.tunnel = hc
	p := hc.pod
	p.mu.Lock()
	if !p.up {
		p.mu.Unlock()
		return
	}
	p.conns[sc] = struct{}{}
	p.mu.Unlock()
	sc.mem.add(connMemory)
	p.hcm.connOpened(sc)
	sc.serve()
	tc.wait()
}

// tunnelConn is a CONNECT stream as a connection: reads from the request body, writes to the
// response, flushed at once as Envoy forwards each read.
type tunnelConn struct {
	r     io.ReadCloser
	w     io.Writer
	rc    *http.ResponseController
	outer net.Conn

	mu     sync.Mutex
	closed atomic.Bool
	done   chan struct{}
}

func newTunnelConn(r io.ReadCloser, w io.Writer, rc *http.ResponseController, outer net.Conn) *tunnelConn {
	return &tunnelConn{r: r, w: w, rc: rc, outer: outer, done: make(chan struct{})}
}

func (t *tunnelConn) Read(p []byte) (int, error) { return t.r.Read(p) }

func (t *tunnelConn) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return 0, net.ErrClosed
	}
	n, err := t.w.Write(p)
	if err == nil {
		err = t.rc.Flush()
	}
	return n, err
}

// wait returns once the tunnel is closed and no write is under way: the handler may return
// then, and its ResponseWriter is not to be touched after (the HTTP/2 server flushes it as
// the handler ends, so a write still going would race that flush).
func (t *tunnelConn) wait() {
	<-t.done
	t.mu.Lock()
	t.mu.Unlock() // empty: only waiting out the write in flight
}

// Close ends the stream: the handler returns, and the HTTP/2 server ends the stream.
func (t *tunnelConn) Close() error {
	if t.closed.CompareAndSwap(false, true) {
		t.r.Close()
		close(t.done)
	}
	return nil
}

func (t *tunnelConn) LocalAddr() net.Addr              { return t.outer.LocalAddr() }
func (t *tunnelConn) RemoteAddr() net.Addr             { return t.outer.RemoteAddr() }
func (t *tunnelConn) SetDeadline(time.Time) error      { return nil }
func (t *tunnelConn) SetReadDeadline(time.Time) error  { return nil }
func (t *tunnelConn) SetWriteDeadline(time.Time) error { return nil }
