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

	cxTotal, cxActive, cxConnectFail, cxOverflow                   *Stat
	rqTotal, rqActive, rqPendingTotal, rqPendingActive             *Stat
	rqPendingOverflow, rq2xx, rq4xx, rq5xx                         *Stat
	pausedReading, resumedReading, rxBuffered, txBuffered, rxBytes *Stat
	rqTime                                                         *Stat
}

func newCluster(st *Store, name string, endpoints []string, h2 bool, workers int, dial dialFunc) *cluster {
	c := &cluster{name: name, addr: endpoints[0], eps: endpoints, scheme: "http", h2: h2}
	ct := func(n string) *Stat { return clusterStat(st, Counter, name, n) }
	gg := func(n string) *Stat { return clusterStat(st, Gauge, name, n) }
	c.cxTotal, c.cxActive = ct("upstream_cx_total"), gg("upstream_cx_active")
	c.cxConnectFail, c.cxOverflow = ct("upstream_cx_connect_fail"), ct("upstream_cx_overflow")
	c.rqTotal, c.rqActive = ct("upstream_rq_total"), gg("upstream_rq_active")
	c.rqPendingTotal, c.rqPendingActive = ct("upstream_rq_pending_total"), gg("upstream_rq_pending_active")
	c.rqPendingOverflow = ct("upstream_rq_pending_overflow")
	c.rq2xx, c.rq4xx, c.rq5xx = ct("upstream_rq_2xx"), ct("upstream_rq_4xx"), ct("upstream_rq_5xx")
	c.pausedReading = ct("upstream_flow_control_paused_reading_total")
	c.resumedReading = ct("upstream_flow_control_resumed_reading_total")
	c.rxBuffered, c.txBuffered = gg("upstream_cx_rx_bytes_buffered"), gg("upstream_cx_tx_bytes_buffered")
	c.rxBytes = ct("upstream_cx_rx_bytes_total")
	c.rqTime = clusterStat(st, Hist, name, "upstream_rq_time")
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
			c.cxConnectFail.Inc()
			return nil, err
		}
		c.cxTotal.Inc()
		c.cxActive.Inc()
		return &countedConn{Conn: conn, active: c.cxActive}, nil
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
	c.rqTotal.Inc()
	c.rqActive.Inc()
	c.rqPendingTotal.Inc()
	c.rqPendingActive.Inc()
	// A request is pending from asking the pool for a connection until it has one.
	var got atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if got.CompareAndSwap(false, true) {
			c.rqPendingActive.Dec()
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := p.rt.RoundTrip(req)
	if got.CompareAndSwap(false, true) {
		c.rqPendingActive.Dec()
	}
	if err != nil {
		c.rqActive.Dec()
		c.rq5xx.Inc()
		return nil, err
	}
	return resp, nil
}

func (p *upstreamPool) rqDone(status int, d time.Duration) {
	c := p.c
	c.rqActive.Dec()
	switch {
	case status >= 500:
		c.rq5xx.Inc()
	case status >= 400:
		c.rq4xx.Inc()
	default:
		c.rq2xx.Inc()
	}
	c.rqTime.Observe(float64(d) / float64(time.Millisecond))
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
