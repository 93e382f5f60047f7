package emulator

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
)

// cluster is an upstream cluster of a pod: the backend it reaches, one connection pool per
// worker (Envoy's pools are per worker), and the cluster stats under cluster.<name>;.
type cluster struct {
	name   string
	addr   string   // host:port in request URLs
	eps    []string // endpoints: new connections go round-robin over them, as Envoy's LB spreads hosts
	next   atomic.Uint64
	scheme string
	h2     bool // HTTP/2 (h2c) upstream: gRPC and the waypoint's HBONE-like hop
	pools  []*upstreamPool
	// from is the address the pod's connections come from: the request's remote address at
	// the upstream.
	from string

	*model.ClusterStats
}

// newCluster makes a cluster whose workers dial its endpoints with dial, or, where local finds
// every endpoint's replica, reach them in the process (upstream_local.go).
func newCluster(st *Store, name string, endpoints []string, h2 bool, workers int, dial dialFunc, local func(string) *localReplica, from string) *cluster {
	c := &cluster{name: name, addr: endpoints[0], eps: endpoints, scheme: "http", h2: h2, from: from, ClusterStats: model.NewClusterStats(st, name)}
	for w := 0; w < workers; w++ {
		if l := localPool(c, local); l != nil {
			c.pools = append(c.pools, &upstreamPool{c: c, local: l, close: l.closeIdle})
		} else {
			c.pools = append(c.pools, newUpstreamPool(c, dial))
		}
	}
	return c
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// upstreamPool is one worker's connections to a cluster: a Transport's, or, for a replica in
// the process, local's counts.
type upstreamPool struct {
	c     *cluster
	rt    http.RoundTripper
	local *localConns
	close func()
}

func newUpstreamPool(c *cluster, dial dialFunc) *upstreamPool {
	p := &upstreamPool{c: c}
	counted := func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := c.eps[int(c.next.Add(1)-1)%len(c.eps)]
		conn, err := dial(ctx, network, addr)
		if err != nil {
			c.CxConnectFail.Inc()
			return nil, err
		}
		c.CxTotal.Inc()
		c.CxActive.Inc()
		return &countedConn{Conn: conn, active: c.CxActive}, nil
	}
	if c.h2 {
		t := &http2.Transport{AllowHTTP: true, DisableCompression: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				return counted(ctx, network, addr)
			}}
		p.rt, p.close = t, t.CloseIdleConnections
	} else {
		t := &http.Transport{DialContext: counted, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 60 * time.Second,
			DisableCompression: true, ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10, ForceAttemptHTTP2: false}
		p.rt, p.close = t, t.CloseIdleConnections
	}
	return p
}

func (p *upstreamPool) roundTrip(req *http.Request) (*http.Response, error) {
	p.rqPending()
	// A request is pending from asking the pool for a connection until it has one.
	var got atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if got.CompareAndSwap(false, true) {
			p.c.RqPendingActive.Dec()
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := p.rt.RoundTrip(req)
	if got.CompareAndSwap(false, true) {
		p.c.RqPendingActive.Dec()
	}
	if err != nil {
		p.rqFailed()
		return nil, err
	}
	return resp, nil
}

// rqPending counts a request that asks the pool for a connection.
func (p *upstreamPool) rqPending() {
	c := p.c
	c.RqTotal.Inc()
	c.RqActive.Inc()
	c.RqPendingTotal.Inc()
	c.RqPendingActive.Inc()
}

// rqFailed counts a request that got no response head.
func (p *upstreamPool) rqFailed() {
	p.c.RqActive.Dec()
	p.c.Rq5xx.Inc()
}

func (p *upstreamPool) rqDone(status int, d time.Duration) {
	c := p.c
	c.RqActive.Dec()
	switch {
	case status >= 500:
		c.Rq5xx.Inc()
	case status >= 400:
		c.Rq4xx.Inc()
	default:
		c.Rq2xx.Inc()
	}
	c.RqTime.Observe(float64(d) / float64(time.Millisecond))
}

type countedConn struct {
	net.Conn
	active *Stat
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.active.Dec()
	}
	return c.Conn.Close()
}
