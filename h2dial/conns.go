package h2dial

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httptrace"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// trackedConn is a client connection with its own request counter. The transport hands it
// back to httptrace's GotConn on every request, which is how requests are counted per
// connection without touching the transport's internals.
type trackedConn struct {
	net.Conn
	id       int
	opened   time.Duration
	requests atomic.Int64
	closed   atomic.Int64 // offset from run start in ns, 0 while open
	table    *connTable
}

func (c *trackedConn) Close() error {
	c.closed.CompareAndSwap(0, int64(time.Since(c.table.start)))
	return c.Conn.Close()
}

// connTable records every connection a run opens.
type connTable struct {
	start time.Time
	mu    sync.Mutex
	conns []*trackedConn
	// allowRemote lets the client dial non-loopback addresses.
	allowRemote bool
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	tls         *tls.Config
}

func newConnTable(o *Options) *connTable {
	t := &connTable{start: time.Now(), allowRemote: o.AllowRemote, dial: o.DialContext}
	if t.dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		t.dial = d.DialContext
	}
	return t
}

// dialTLS is the transport's dial hook: plain TCP for h2c (prior knowledge), TLS with ALPN h2
// for https.
func (t *connTable) dialTLS(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
	if !t.allowRemote {
		if err := checkLoopback(ctx, addr); err != nil {
			return nil, err
		}
	}
	c, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	tc := &trackedConn{Conn: c, table: t, opened: time.Since(t.start)}
	t.mu.Lock()
	tc.id = len(t.conns) + 1
	t.conns = append(t.conns, tc)
	t.mu.Unlock()
	return tc, nil
}

// checkLoopback refuses, before any packet is sent, a target that is not on 127.0.0.0/8 (or
// ::1): load goes elsewhere only when the user says so.
func checkLoopback(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return fmt.Errorf("refusing to send load to %s (%s): only loopback targets (127.0.0.0/8) are allowed without -allow-remote", host, ip.IP)
		}
	}
	return nil
}

// trace returns a ClientTrace that credits each request to its connection.
func (t *connTable) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if tc, ok := info.Conn.(*trackedConn); ok {
			tc.requests.Add(1)
		}
	}}
}

func (t *connTable) opened() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// stats returns one row per connection, in dial order.
func (t *connTable) stats() []ConnStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ConnStat, 0, len(t.conns))
	for _, c := range t.conns {
		cs := ConnStat{
			ID:         c.id,
			LocalAddr:  c.LocalAddr().String(),
			RemoteAddr: c.RemoteAddr().String(),
			Requests:   c.requests.Load(),
			OpenedS:    c.opened.Seconds(),
		}
		if cl := c.closed.Load(); cl > 0 {
			s := time.Duration(cl).Seconds()
			cs.ClosedS = &s
		}
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ConnStat is one client connection of a run.
type ConnStat struct {
	ID         int      `json:"id"`
	LocalAddr  string   `json:"local_addr"`
	RemoteAddr string   `json:"remote_addr"`
	Requests   int64    `json:"requests"`
	OpenedS    float64  `json:"opened_s"`
	ClosedS    *float64 `json:"closed_s,omitempty"`
}
