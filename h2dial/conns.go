package h2dial

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httptrace"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// trackedConn is a client connection with its own request counter. The transport hands it
// back to httptrace's GotConn on every request, which is how requests are counted per
// connection without touching the transport's internals.
//
// It also combines writes. The transport flushes every request's HEADERS frame with a write(2)
// of its own. Here a write only appends to a pending buffer and wakes the connection's writer
// goroutine, which first yields to every goroutine already runnable (the other streams'
// writers, each appending its frames) and then sends all that is pending in one system call.
// No timer is involved: on an idle connection the frames go out at once, and under load the
// frames of many requests share one system call, as they do in h2load.
type trackedConn struct {
	net.Conn
	id       int
	opened   time.Duration
	requests atomic.Int64
	closed   atomic.Int64 // offset from run start in ns, 0 while open
	table    *connTable
	spans    []Span // the long-stream mode's streams on it, under table.mu

	wmu       sync.Mutex
	wcond     sync.Cond // signalled when the writer has taken the pending bytes
	pending   []byte
	scheduled bool // the writer has been woken and has not yet taken pending
	werr      error
	wake      chan struct{}
	done      chan struct{}
}

// maxPending bounds what may wait for the writer (besides the batch it is writing); past it,
// a write blocks.
const maxPending = 256 << 10

func newTrackedConn(c net.Conn, t *connTable) *trackedConn {
	tc := &trackedConn{Conn: c, table: t, opened: time.Since(t.start), wake: make(chan struct{}, 1), done: make(chan struct{})}
	tc.wcond.L = &tc.wmu
	go tc.writer()
	return tc
}

func (c *trackedConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for len(c.pending)+len(p) > maxPending && len(c.pending) > 0 && c.werr == nil {
		c.wcond.Wait()
	}
	if c.werr != nil {
		return 0, c.werr
	}
	c.pending = append(c.pending, p...)
	if !c.scheduled {
		c.scheduled = true
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (c *trackedConn) writer() {
	var spare []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		runtime.Gosched() // let the streams already runnable add their frames first
		c.wmu.Lock()
		buf := c.pending
		c.pending, c.scheduled = spare[:0], false
		c.wcond.Broadcast()
		c.wmu.Unlock()
		if _, err := c.Conn.Write(buf); err != nil {
			c.wmu.Lock()
			c.werr = err
			c.wcond.Broadcast()
			c.wmu.Unlock()
			return
		}
		spare = buf[:0]
	}
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(0, int64(time.Since(c.table.start))) {
		close(c.done)
	}
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
		if err := CheckLoopback(ctx, addr); err != nil {
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
	tc := newTrackedConn(c, t)
	t.mu.Lock()
	tc.id = len(t.conns) + 1
	t.conns = append(t.conns, tc)
	t.mu.Unlock()
	return tc, nil
}

// CheckLoopback refuses, before any packet is sent, a target that is not on 127.0.0.0/8 (or
// ::1): load goes elsewhere only when the user says so.
func CheckLoopback(ctx context.Context, addr string) error {
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

// closeAll closes every connection of the run.
func (t *connTable) closeAll() {
	t.mu.Lock()
	conns := append([]*trackedConn(nil), t.conns...)
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
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
