package emulator

import (
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The gateway's HTTP/1.1 hop to go-httpbin, when nothing delays it (no --upstream-rtt), is an
// exchange in the process: the stream calls the replica's handler with the request net/http's
// server would have parsed from what net/http's Transport writes, and takes the response the
// Transport would have read from what the server writes (upstream_request.go,
// upstream_exchange.go). Over connections (memconn.go) the request and response were written,
// framed, parsed and copied twice each and crossed four goroutines: more than a third of the
// pool's CPU per request under the harness, CPU the clients and the emulated workers need on a
// small machine. What the lab reads of that hop stays: the cluster's requests, connections and
// bytes, and the replica's ztunnel counts, kept by the Transport's and the server's rules. The
// client's side, what the knobs act on, stays on real sockets; with an upstream round trip the
// hop goes over connections, which carry the delay.

// localReplica is a go-httpbin replica the pods reach in the process.
type localReplica struct {
	handler http.Handler
	z       *Ztunnel
	addr    net.Addr
	closed  atomic.Bool // the replica's server is down: connections are refused
}

// localConn is one of a worker's keep-alive connections to a replica, as counts: the replica
// (and so the ztunnel) it reached, and since when it has been idle.
type localConn struct {
	r         *localReplica
	idleSince time.Time
}

// localConns is a worker's connection pool to an HTTP/1.1 cluster by net/http's Transport's
// rules (transport.go, getConn/tryPutIdleConn): a request takes the connection most recently
// put back, a new one goes round-robin over the endpoints (the cluster's dial), at most
// maxIdlePerHost wait idle and each is closed after idleTimeout idle. All requests name the
// cluster's first address, so all connections are one host's to the Transport.
type localConns struct {
	c     *cluster
	reps  []*localReplica // by endpoint, as c.eps
	mu    sync.Mutex
	idle  []*localConn // oldest first: taken from the end
	timer *time.Timer
}

// The Transport's limits the pods' pools are built with (upstream.go, newUpstreamPool).
const (
	maxIdlePerHost = 1024
	idleTimeout    = 60 * time.Second
)

// localPool is the in-process pool for cluster c when every endpoint is a local replica, or nil.
func localPool(c *cluster, local func(addr string) *localReplica) *localConns {
	if c.h2 || local == nil {
		return nil
	}
	l := &localConns{c: c}
	for _, ep := range c.eps {
		r := local(ep)
		if r == nil {
			return nil
		}
		l.reps = append(l.reps, r)
	}
	return l
}

// get takes an idle connection or opens one; a replica that is down refuses it as its socket
// would, and the cluster counts a connect failure.
func (l *localConns) get() (*localConn, error) {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		lc := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return lc, nil
	}
	l.mu.Unlock()
	c := l.c
	r := l.reps[int(c.next.Add(1)-1)%len(l.reps)]
	if r.closed.Load() {
		c.CxConnectFail.Inc()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: r.addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	c.CxTotal.Inc()
	c.CxActive.Inc()
	r.z.opened.Add(1)
	return &localConn{r: r}, nil
}

// put gives a connection back after its exchange: kept idle when both ends would keep it,
// closed otherwise.
func (l *localConns) put(lc *localConn, reuse bool) {
	if reuse && !lc.r.closed.Load() {
		l.mu.Lock()
		if len(l.idle) < maxIdlePerHost {
			lc.idleSince = time.Now()
			l.idle = append(l.idle, lc)
			if l.timer == nil {
				l.timer = time.AfterFunc(idleTimeout, l.expire)
			}
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
	l.closeConn(lc)
}

func (l *localConns) closeConn(lc *localConn) {
	l.c.CxActive.Dec()
	lc.r.z.closed.Add(1)
}

// expire closes the connections idle for idleTimeout, and waits for the next oldest.
func (l *localConns) expire() {
	now := time.Now()
	l.mu.Lock()
	n := 0
	for n < len(l.idle) && now.Sub(l.idle[n].idleSince) >= idleTimeout {
		n++
	}
	gone := append([]*localConn(nil), l.idle[:n]...)
	l.idle = append(l.idle[:0], l.idle[n:]...)
	l.timer = nil
	if len(l.idle) > 0 {
		l.timer = time.AfterFunc(idleTimeout-now.Sub(l.idle[0].idleSince), l.expire)
	}
	l.mu.Unlock()
	for _, lc := range gone {
		l.closeConn(lc)
	}
}

// closeIdle is the Transport's CloseIdleConnections: a stopped pod's idle connections close.
func (l *localConns) closeIdle() {
	l.mu.Lock()
	gone := l.idle
	l.idle = nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	for _, lc := range gone {
		l.closeConn(lc)
	}
}
