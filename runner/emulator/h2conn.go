package emulator

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/runner/model"
)

// serverConn serves one downstream HTTP/2 connection on one worker, split as Envoy splits it:
// the network connection (this file: reading, writing, the worker's pace), the HTTP/2 codec
// session (h2session.go over the frame decoder of h2decode.go, with oghttp2's or nghttp2's
// rules), the connection manager (hcm.go) and Envoy's protocol constraints (h2flood.go).
// docs/envoy-conformance.md names the Envoy, QUICHE and nghttp2 source of each behaviour.
//
// The read side works as Envoy's does: one goroutine reads the socket into a buffer of up to
// per_connection_buffer_limit_bytes (raw_buffer_socket.cc doRead); the worker dispatches the
// whole buffer to the codec at once (ConnectionManagerImpl::onData -> ConnectionImpl::dispatch)
// and takes the next buffer only once it is at the last piece of work the previous one made. A
// busy worker so reads late, the kernel's buffers fill and TCP throttles the client. Frames the
// codec queues while it dispatches go out when the worker has done that dispatch's work.
type serverConn struct {
	h *hcm
	// mem is the pod's memory count as it stood when the connection was accepted: what the
	// connection holds is given back to that count, not to the one a restart (after an OOM
	// kill, say) started afresh while the dead connection was still letting go.
	mem    *podMemory
	w      *Worker
	cfg    *listenerConfig
	nc     net.Conn
	ctx    context.Context
	cancel context.CancelFunc
	opened time.Time
	codec  string
	// tunnel is the HBONE connection this connection arrived in (nil: a connection of its own).
	tunnel *hboneConn

	in  readBuffer
	dec *frameDecoder
	// lastBooking is the latest work booked while dispatching the current read: the next read
	// is dispatched once the worker is at it.
	lastBooking Booking

	// Write side: frames are encoded into out under wmu; writeLoop flushes them.
	wmu       sync.Mutex
	fr        *http2.Framer
	out       *bytes.Buffer
	spare     *bytes.Buffer
	outFrames int // frames in out, and how many of them are control frames (Envoy's accounting)
	outCtrl   int
	henc      *hpack.Encoder
	hbuf      bytes.Buffer
	kick      chan struct{}
	queued    atomic.Int64 // bytes encoded and not yet written to the socket
	wclosed   bool

	// order runs what is due in the worker's order: a request's filters once the worker has
	// done its work, the frames a dispatch queued once it has done the dispatch.
	order workOrder

	sess session
	pc   protocolConstraints
	// prefaced is closed once the server's SETTINGS is written: a response never overtakes it.
	prefaced chan struct{}
	// pendingFlush is the current dispatch's (the dispatcher's own): what its streams flush
	// before their responses (dispatchFlush).
	pendingFlush *dispatchFlush

	// Stream and flow-control state, under mu; cond wakes writers waiting for window, for the
	// write buffer to drain or for a stream's send buffer to empty.
	mu             sync.Mutex
	cond           *sync.Cond
	streams        map[uint32]*stream
	open           uint32 // streams not yet closed in HTTP/2's sense: what the cap counts
	connSendWindow int64
	peerInitWindow int64
	peerMaxFrame   atomic.Uint32
	blocked        []*stream // streams with response data waiting for a window
	// Receive side (the codec's local window): what the client may still send on the
	// connection, and bytes consumed and not yet returned to it in a WINDOW_UPDATE.
	connRecvWindow int64
	connConsumed   int64
	// ackedMaxStreams is the stream cap in force: unlimited until the client acknowledges our
	// SETTINGS (oghttp2's max_inbound_concurrent_streams_), then the cap.
	ackedMaxStreams uint32
	requests        uint64
	drain           model.Drain // the drain sequence (runner/model/conn.go)
	closing         bool
	idleTimer       *time.Timer
	lastActive      time.Time
	atCap           bool

	// listenerDraining is set when the listener this connection was accepted on is replaced:
	// the connection manager's drain decision then says "close" at the next response.
	listenerDraining atomic.Bool
	// closedByUs records that the gateway closed the connection (after a drain, on a protocol
	// error, when its listener or pod went away); otherwise the client did.
	closedByUs atomic.Bool
	// hasCodec is set once bytes have arrived (ConnectionManagerImpl::onData creates codec_
	// with the first); until then a timeout closes the connection outright. h2 is set once
	// the preface chose HTTP/2.
	hasCodec, h2 atomic.Bool
	// misattributed: the gateway closed the connection from outside the connection manager
	// (its listener finished draining, the codec's flood callback), which Envoy's connection
	// manager counts under the remote side's active-request counter.
	misattributed atomic.Bool
	// delayedClose is set once the gateway decided to close and is waiting for the client to
	// close first; input is ignored from then on.
	delayedClose atomic.Bool
	// goingAway: the session queued an error GOAWAY (or failed) and takes no more frames.
	goingAway atomic.Bool
	closeOnce sync.Once
	rqSide    int // under mu: the side its active requests were counted under at close
	// codecActive is the active-connections gauge of the codec the connection got.
	codecActive *Stat

	// The connection manager's premature-reset guard (h2reset.go), under mu.
	closedStreams, prematureStreams uint64
	prematureTripped                bool
}

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// unlimitedStreams is the local cap in force before the client acknowledges ours.
const unlimitedStreams = 0xffffffff

func newServerConn(h *hcm, w *Worker, cfg *listenerConfig, nc net.Conn) *serverConn {
	sc := &serverConn{
		h: h, mem: h.pod.mem, w: w, cfg: cfg, nc: nc, opened: time.Now(), codec: h.pod.pool.cfg.Codec,
		out: &bytes.Buffer{}, spare: &bytes.Buffer{}, kick: make(chan struct{}, 1),
		streams: map[uint32]*stream{}, connSendWindow: 65535, peerInitWindow: 65535, prefaced: make(chan struct{}),
		connRecvWindow: int64(cfg.ConnWindow), ackedMaxStreams: unlimitedStreams,
	}
	sc.peerMaxFrame.Store(16384)
	sc.cond = sync.NewCond(&sc.mu)
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	sc.in.init(int(cfg.BufferLimit), sc.mem)
	sc.order.init()
	sc.fr = http2.NewFramer(writerFunc(sc.encode), nil)
	sc.henc = hpack.NewEncoder(&sc.hbuf)
	sc.dec = newFrameDecoder(sc, sc.codec, maxRequestHeadersBytes())
	sc.pc = newProtocolConstraints(cfg)
	return sc
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// encode is the Framer's writer: it appends to the outgoing buffer (wmu is held).
func (sc *serverConn) encode(p []byte) (int, error) {
	sc.queued.Add(int64(len(p)))
	sc.mem.add(int64(len(p)))
	return sc.out.Write(p)
}

// flush hands what was encoded to the writer goroutine (wmu is held).
func (sc *serverConn) flush() {
	select {
	case sc.kick <- struct{}{}:
	default:
	}
}

func (sc *serverConn) writeLoop() {
	for {
		select {
		case <-sc.kick:
		case <-sc.ctx.Done():
			return
		}
		// Let the goroutines already runnable (a handler about to write the DATA after its
		// HEADERS, other streams' responses) add their frames first: they then share one
		// write(2). Nothing waits on a timer, so a lone frame still goes out at once.
		runtime.Gosched()
		sc.wmu.Lock()
		buf, frames, ctrl := sc.out, sc.outFrames, sc.outCtrl
		sc.out, sc.outFrames, sc.outCtrl = sc.spare, 0, 0
		sc.wmu.Unlock()
		if buf.Len() > 0 {
			n := buf.Len()
			_, err := sc.nc.Write(buf.Bytes())
			sc.queued.Add(-int64(n))
			sc.mem.add(-int64(n))
			sc.pc.written(frames, ctrl)
			sc.h.TxBytes.Add(int64(n))
			sc.mu.Lock()
			sc.cond.Broadcast() // the write buffer drained: paused streams may resume
			sc.mu.Unlock()
			if err != nil {
				sc.close("write: " + err.Error())
				return
			}
		}
		buf.Reset()
		sc.wmu.Lock()
		sc.spare = buf
		sc.wmu.Unlock()
	}
}

// serve runs the connection until it closes. The caller has counted the connection open. When
// the read side ends without the gateway having closed first, the client closed it.
func (sc *serverConn) serve() {
	defer sc.close("")
	go sc.writeLoop()
	go sc.order.run(sc.ctx)
	go sc.readLoop()
	// The connection manager arms the idle timer and max_connection_duration as it is
	// accepted, before any byte has chosen a codec (ConnectionManagerImpl::
	// initializeReadFilterCallbacks), so a client that never speaks is closed by them too.
	sc.armTimers()
	h2 := sc.readPreface()
	for {
		data, err := sc.in.take(sc.ctx)
		if h2 && len(data) > 0 && !sc.delayedClose.Load() {
			sc.dispatch(data)
		}
		sc.in.release(data)
		if err != nil {
			return // the client closed (or reset) the connection: Envoy's RemoteClose
		}
		// The next read waits for the worker, unless the client goes away meanwhile.
		if sc.lastBooking.WaitStart(sc.in.ended) != nil && sc.ctx.Err() != nil {
			return
		}
	}
}

// readPreface waits for the client connection preface. Envoy's connection manager picks the
// codec from the first bytes (codec_type AUTO: conn_manager_utility.cc determineNextProtocol):
// anything else than HTTP/2's preface meets the HTTP/1 codec (h1reject.go).
func (sc *serverConn) readPreface() bool {
	var got []byte
	deadline := time.AfterFunc(10*time.Second, func() { sc.closeByUs("no preface") })
	defer deadline.Stop()
	for len(got) < len(clientPreface) {
		data, err := sc.in.take(sc.ctx)
		if len(data) > 0 {
			sc.hasCodec.Store(true)
		}
		got = append(got, data...)
		sc.in.release(data)
		n := min(len(got), len(clientPreface))
		if string(got[:n]) != clientPreface[:n] {
			sc.rejectAsHTTP1(got, err)
			return false
		}
		if err != nil {
			return false
		}
	}
	sc.countCodec(true)
	sc.startSession()
	if rest := got[len(clientPreface):]; len(rest) > 0 {
		sc.dispatch(rest)
	} else {
		sc.endDispatch()
	}
	return true
}

// dispatch feeds one read to the codec, as ConnectionImpl::dispatch does, then schedules the
// frames it queued for when the worker has done the read's work.
func (sc *serverConn) dispatch(data []byte) {
	sc.lastBooking = Booking{}
	// ServerConnectionImpl::dispatch checks the outbound limits before it reads a byte.
	if !sc.pc.checkOutbound(sc.h) {
		sc.failFlood(nil)
	} else {
		sc.dec.feed(data)
	}
	sc.endDispatch()
}

// book queues d of the worker's time for this connection's dispatch.
func (sc *serverConn) book(d time.Duration) Booking {
	b := sc.w.Book(sc, d)
	sc.lastBooking = b
	return b
}

// readBuffer is the connection's read buffer: the reader fills it up to the limit, the worker
// takes all of it at each dispatch.
type readBuffer struct {
	mu    sync.Mutex
	cond  *sync.Cond
	data  []byte
	err   error // why reading ended
	limit int   // per_connection_buffer_limit_bytes; 0: none
	mem   *podMemory
	// ended is done once reading has ended or the connection closed.
	ended       context.Context
	endedCancel context.CancelFunc
}

func (b *readBuffer) init(limit int, mem *podMemory) {
	b.cond = sync.NewCond(&b.mu)
	b.limit, b.mem = limit, mem
	b.ended, b.endedCancel = context.WithCancel(context.Background())
}

// readChunk is what one read(2) asks for: Envoy's reservation of 8 slices of 16 KiB.
const readChunk = 128 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

func (sc *serverConn) readLoop() {
	b := &sc.in
	defer b.endedCancel()
	for {
		bp := readBufs.Get().(*[]byte)
		n, err := sc.nc.Read(*bp)
		b.mu.Lock()
		if n > 0 {
			b.data = append(b.data, (*bp)[:n]...)
			b.mem.add(int64(n))
		}
		readBufs.Put(bp)
		if err != nil {
			b.err = err
			b.cond.Broadcast()
			b.mu.Unlock()
			return
		}
		b.cond.Broadcast()
		// A full buffer is not read further until the worker has taken it: the kernel holds
		// the rest and TCP pushes back on the client.
		for b.limit > 0 && len(b.data) >= b.limit && b.err == nil && sc.ctx.Err() == nil {
			b.cond.Wait()
		}
		stop := sc.ctx.Err() != nil
		b.mu.Unlock()
		if stop {
			return
		}
	}
}

// take waits for input and returns all of it, and why reading ended once nothing is left.
func (b *readBuffer) take(ctx context.Context) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.data) == 0 && b.err == nil && ctx.Err() == nil {
		b.cond.Wait()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	data := b.data
	b.data = nil
	b.cond.Broadcast()
	if len(data) == 0 {
		return nil, b.err
	}
	return data, nil
}

// release gives back the memory of input the worker has dispatched.
func (b *readBuffer) release(data []byte) { b.mem.add(-int64(len(data))) }

// wake unblocks the reader and the dispatcher when the connection closes.
func (b *readBuffer) wake() {
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
	b.endedCancel()
}

// workOrder runs functions as the worker reaches booked work, in the order they were queued:
// a connection's bookings are done in that order, since the worker does its work in the order
// it was booked.
type workOrder struct {
	mu    sync.Mutex
	items []orderItem
	wake  chan struct{}
}

type orderItem struct {
	b     Booking
	start func() // when the worker takes the work up; may be nil
	end   func() // when it is done
}

func (o *workOrder) init() { o.wake = make(chan struct{}, 1) }

func (o *workOrder) push(it orderItem) {
	o.mu.Lock()
	o.items = append(o.items, it)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *workOrder) run(ctx context.Context) {
	for {
		o.mu.Lock()
		items := o.items
		o.items = nil
		o.mu.Unlock()
		for i, it := range items {
			if ctx.Err() != nil {
				return
			}
			if it.start != nil {
				err := it.b.WaitStart(ctx)
				if err == errDropped {
					continue
				}
				if err != nil {
					return
				}
				it.start()
			}
			err := it.b.Wait(ctx)
			if err == errDropped {
				continue
			}
			if err != nil {
				return
			}
			it.end()
			items[i] = orderItem{}
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return
		}
	}
}
