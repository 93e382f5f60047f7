package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// delayConn puts a network's round-trip time on a loopback connection: every byte read from it
// becomes readable half the round trip after it arrived, and every byte written leaves half the
// round trip after it was written, in order. Goroutines wait on the pool's clock and burn no
// CPU. HTTP/2's windows then refill one round trip after they were spent, as across a real
// network: a stream moves at most one window per round trip.
type delayConn struct {
	net.Conn
	clock *Clock
	half  time.Duration
	ctx   context.Context
	stop  context.CancelFunc

	in, out *delayQueue
	rdErr   error // the underlying read error, delivered after the data before it
	closing sync.Once
}

// maxInFlight bounds the bytes each direction holds, like a link's buffer: a sender that gets
// that far ahead of its delay waits.
const maxInFlight = 8 << 20

// withRTT wraps c with a round-trip time rtt (nothing when rtt is 0).
func withRTT(c net.Conn, rtt time.Duration, clock *Clock) net.Conn {
	if rtt <= 0 {
		return c
	}
	d := &delayConn{Conn: c, clock: clock, half: rtt / 2, in: newDelayQueue(), out: newDelayQueue()}
	d.ctx, d.stop = context.WithCancel(context.Background())
	go d.readLoop()
	go d.writeLoop()
	return d
}

type chunk struct {
	at  time.Time
	buf []byte
}

// delayQueue is an ordered queue of chunks with a byte bound.
type delayQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	chunks []chunk
	bytes  int
	closed bool
	err    error // set when the producer ended
}

func newDelayQueue() *delayQueue {
	q := &delayQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push appends a chunk, waiting while the queue is full.
func (q *delayQueue) push(c chunk) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes+len(c.buf) > maxInFlight && q.bytes > 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return net.ErrClosed
	}
	q.chunks = append(q.chunks, c)
	q.bytes += len(c.buf)
	q.cond.Broadcast()
	return nil
}

// head waits for the oldest chunk (or the end of the queue).
func (q *delayQueue) head() (chunk, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.chunks) == 0 && !q.closed && q.err == nil {
		q.cond.Wait()
	}
	if len(q.chunks) == 0 {
		if q.err != nil {
			return chunk{}, q.err
		}
		return chunk{}, net.ErrClosed
	}
	return q.chunks[0], nil
}

// take removes n bytes from the oldest chunk.
func (q *delayQueue) take(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := &q.chunks[0]
	c.buf = c.buf[n:]
	q.bytes -= n
	if len(c.buf) == 0 {
		q.chunks = q.chunks[1:]
	}
	q.cond.Broadcast()
}

func (q *delayQueue) end(err error, closed bool) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.closed = q.closed || closed
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (d *delayConn) readLoop() {
	for {
		buf := make([]byte, 32<<10)
		n, err := d.Conn.Read(buf)
		if n > 0 {
			if d.in.push(chunk{at: time.Now().Add(d.half), buf: buf[:n]}) != nil {
				return
			}
		}
		if err != nil {
			d.in.end(err, false)
			return
		}
	}
}

// Read returns bytes once their half of the round trip has passed.
func (d *delayConn) Read(p []byte) (int, error) {
	c, err := d.in.head()
	if err != nil {
		if errors.Is(err, net.ErrClosed) && d.ctx.Err() == nil {
			return 0, io.EOF
		}
		return 0, err
	}
	if err := d.clock.SleepUntil(d.ctx, c.at); err != nil {
		return 0, net.ErrClosed
	}
	n := copy(p, c.buf)
	d.in.take(n)
	return n, nil
}

// Write queues the bytes to leave after half the round trip.
func (d *delayConn) Write(p []byte) (int, error) {
	if err := d.out.push(chunk{at: time.Now().Add(d.half), buf: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (d *delayConn) writeLoop() {
	for {
		c, err := d.out.head()
		if err != nil {
			if cw, ok := d.Conn.(interface{ CloseWrite() error }); ok && !errors.Is(err, net.ErrClosed) {
				_ = cw.CloseWrite()
			}
			return
		}
		if d.clock.SleepUntil(d.ctx, c.at) != nil {
			return
		}
		n, err := d.Conn.Write(c.buf)
		d.out.take(n)
		if err != nil {
			d.out.end(err, true)
			return
		}
	}
}

// CloseWrite sends FIN once the bytes written before it have left.
func (d *delayConn) CloseWrite() error {
	d.out.end(io.EOF, false)
	return nil
}

// Close ends both directions at once, as a reset connection does.
func (d *delayConn) Close() error {
	d.closing.Do(func() {
		d.stop()
		d.in.end(net.ErrClosed, true)
		d.out.end(net.ErrClosed, true)
	})
	return d.Conn.Close()
}
