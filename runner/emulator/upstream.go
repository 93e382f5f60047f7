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

	*model.ClusterStats
}

func newCluster(st *Store, name string, endpoints []string, h2 bool, workers int, dial dialFunc) *cluster {
	c := &cluster{name: name, addr: endpoints[0], eps: endpoints, scheme: "http", h2: h2, ClusterStats: model.NewClusterStats(st, name)}
	for w := 0; w < workers; w++ {
		c.pools = append(c.pools, newUpstreamPool(c, dial))
	}
	return c
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// upstreamPool is one worker's connections to a cluster.
type upstreamPool struct {
	c     *cluster
	rt    http.RoundTripper
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
	c := p.c
	c.RqTotal.Inc()
	c.RqActive.Inc()
	c.RqPendingTotal.Inc()
	c.RqPendingActive.Inc()
	// A request is pending from asking the pool for a connection until it has one.
	var got atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if got.CompareAndSwap(false, true) {
			c.RqPendingActive.Dec()
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := p.rt.RoundTrip(req)
	if got.CompareAndSwap(false, true) {
		c.RqPendingActive.Dec()
	}
	if err != nil {
		c.RqActive.Dec()
		c.Rq5xx.Inc()
		return nil, err
	}
	return resp, nil
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
