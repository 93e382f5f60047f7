package emulator

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// With an upstream round trip (--upstream-rtt) the gateway pods' HTTP/1.1 hop to go-httpbin
// goes over connections that carry the delay (without one it is an exchange in the process,
// upstream_local.go): a pod dials a replica's address and gets one end of an in-memory
// connection whose other end the replica's http.Server accepts, so the request crosses
// net/http's client and server and go-httpbin's handler, but not four system calls and two
// poller wake-ups each way. The client's side, what the knobs act on, stays on real sockets.
// Each direction buffers up to what a loopback socket holds (net.ipv4.tcp_wmem's default
// maximum), so a body the server has not read yet waits as it would in the kernel, and
// deadlines behave as a socket's (the server's background read is stopped by one).
const memConnBuffer = 4 << 20

// memListener is a replica's in-process listener, beside its TCP one.
type memListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newMemListener(addr net.Addr) *memListener {
	return &memListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// dial hands the listener the server's end and returns the client's, refused as a socket is
// once the listener is closed, so the cluster counts a connect failure just the same.
func (l *memListener) dial(ctx context.Context, from net.Addr) (net.Conn, error) {
	c, s := memPipe(from, l.addr)
	select {
	case l.ch <- s:
		return c, nil
	case <-l.done:
	case <-ctx.Done():
		c.Close()
		s.Close()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: l.addr, Err: ctx.Err()}
	}
	c.Close()
	s.Close()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: l.addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// memPipe is a connected pair: what one writes the other reads.
func memPipe(client, server net.Addr) (net.Conn, net.Conn) {
	a, b := newMemBuf(), newMemBuf()
	ca, cb := make(chan struct{}), make(chan struct{})
	c := &memConn{in: a, out: b, local: client, remote: server, closed: ca, peerClosed: cb}
	s := &memConn{in: b, out: a, local: server, remote: client, closed: cb, peerClosed: ca}
	c.rd.init()
	c.wd.init()
	s.rd.init()
	s.wd.init()
	return c, s
}

// memBuf is one direction's bytes in flight.
type memBuf struct {
	mu       sync.Mutex
	buf      []byte // buf[r:] is in flight; reused from the start once drained
	r        int
	eof      bool          // the writer closed: reads end once data is drained
	readable chan struct{} // a token when data arrives or eof is set
	writable chan struct{} // a token when data is taken
}

func newMemBuf() *memBuf {
	return &memBuf{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

type memConn struct {
	in, out    *memBuf
	local      net.Addr
	remote     net.Addr
	once       sync.Once
	closed     chan struct{} // this end closed
	peerClosed chan struct{} // the other end closed: writes fail as on a reset socket
	rd, wd     memDeadline
}

func (c *memConn) Read(p []byte) (int, error) {
	for {
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		default:
		}
		b := c.in
		b.mu.Lock()
		if b.r < len(b.buf) {
			n := copy(p, b.buf[b.r:])
			b.r += n
			if b.r == len(b.buf) {
				b.buf, b.r = b.buf[:0], 0
			}
			b.mu.Unlock()
			signal(b.writable)
			return n, nil
		}
		eof := b.eof
		b.mu.Unlock()
		if eof {
			return 0, io.EOF
		}
		select {
		case <-b.readable:
		case <-c.rd.expired():
			return 0, os.ErrDeadlineExceeded
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		select {
		case <-c.closed:
			return written, net.ErrClosed
		case <-c.peerClosed:
			return written, os.NewSyscallError("write", syscall.EPIPE)
		default:
		}
		b := c.out
		b.mu.Lock()
		if room := memConnBuffer - (len(b.buf) - b.r); room > 0 {
			n := min(room, len(p))
			if b.r > 0 && len(b.buf)+n > cap(b.buf) {
				b.buf, b.r = b.buf[:copy(b.buf, b.buf[b.r:])], 0
			}
			b.buf = append(b.buf, p[:n]...)
			b.mu.Unlock()
			signal(b.readable)
			p, written = p[n:], written+n
			continue
		}
		b.mu.Unlock()
		select {
		case <-b.writable:
		case <-c.wd.expired():
			return written, os.ErrDeadlineExceeded
		case <-c.closed:
			return written, net.ErrClosed
		case <-c.peerClosed:
			return written, os.NewSyscallError("write", syscall.EPIPE)
		}
	}
	return written, nil
}

// Close ends both directions: the peer reads what was sent, then EOF, and its writes fail.
func (c *memConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.out.mu.Lock()
		c.out.eof = true
		c.out.mu.Unlock()
		signal(c.out.readable)
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

func (c *memConn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}
func (c *memConn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// memDeadline is a settable deadline whose channel is closed once it passes.
type memDeadline struct {
	mu    sync.Mutex
	timer *time.Timer
	ch    chan struct{}
}

func (d *memDeadline) init() { d.ch = make(chan struct{}) }

func (d *memDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.ch // the timer fired (or is firing): wait until it has closed ch
	}
	d.timer = nil
	select {
	case <-d.ch:
		d.ch = make(chan struct{}) // passed before: a new deadline starts afresh
	default:
	}
	if t.IsZero() {
		return
	}
	if dur := time.Until(t); dur > 0 {
		ch := d.ch
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	close(d.ch)
}

func (d *memDeadline) expired() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}
