package emulator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// serverConn serves one downstream HTTP/2 connection on one worker, as Envoy's HTTP connection
// manager does over its default codec, nghttp2: SETTINGS from the knobs; a stream over an
// acknowledged stream cap is a connection error, over a cap not yet acknowledged it is
// refused; the receive windows are enforced and returned as data is consumed; each stream's
// response is buffered up to the per-stream limit; the two-step GOAWAY drain; and control
// frames that answer the client wait for the worker, as everything of a connection does in
// Envoy. docs/envoy-conformance.md names the Envoy and nghttp2 source for each behaviour.
//
// Frames are read and written with golang.org/x/net/http2's Framer and hpack. One goroutine
// reads, one writes what the stream handlers queue, one runs control frames in the worker's
// order, and each stream has its own handler.
type serverConn struct {
	h      *hcm
	w      *Worker
	cfg    *listenerConfig
	nc     net.Conn
	br     *bufio.Reader
	fr     *http2.Framer
	ctx    context.Context
	cancel context.CancelFunc
	opened time.Time

	// Write side: frames are encoded into out under wmu; writeLoop flushes them.
	wmu     sync.Mutex
	out     *bytes.Buffer
	spare   *bytes.Buffer
	henc    *hpack.Encoder
	hbuf    bytes.Buffer
	kick    chan struct{}
	queued  atomic.Int64 // bytes encoded and not yet written to the socket
	wclosed bool

	// ctrl runs control frames once the worker has done the work booked before them.
	ctrl chan ctrlItem

	// Stream and flow-control state, under mu; cond wakes writers waiting for window, for the
	// write buffer to drain or for a stream's send buffer to empty.
	mu             sync.Mutex
	cond           *sync.Cond
	streams        map[uint32]*stream
	open           uint32 // streams not yet closed in HTTP/2's sense: what the cap counts
	maxClientID    uint32 // highest stream id received
	lastAccepted   uint32 // last stream accepted (nghttp2's last processed stream)
	connSendWindow int64
	peerInitWindow int64
	peerMaxFrame   atomic.Uint32
	blocked        []*stream // streams with response data waiting for a window
	// Receive side (nghttp2's local window): what the client may still send on the connection,
	// and bytes consumed and not yet returned to it in a WINDOW_UPDATE.
	connRecvWindow int64
	connConsumed   int64
	// ackedMaxStreams is nghttp2's local_settings.max_concurrent_streams: unlimited until the
	// client acknowledges our SETTINGS, then the cap.
	ackedMaxStreams uint32
	requests        uint64
	drain           drainState
	drainReason     string
	closing         bool
	peerGoneAway    bool
	idleTimer       *time.Timer
	lastActive      time.Time
	atCap           bool

	// listenerDraining is set when the listener this connection was accepted on is replaced:
	// the connection manager's drain decision then says "close" at the next response.
	listenerDraining atomic.Bool
	// closedByUs records that the gateway closed the connection (after a drain, on a protocol
	// error, when its listener or pod went away); otherwise the client did.
	closedByUs atomic.Bool
	// delayedClose is set once the gateway decided to close and is waiting for the client to
	// close first; input is ignored from then on.
	delayedClose    atomic.Bool
	listenerRemoved atomic.Bool
	closeOnce       sync.Once
}

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// unlimitedStreams is nghttp2's NGHTTP2_DEFAULT_MAX_CONCURRENT_STREAMS, the local cap in force
// before the client acknowledges ours.
const unlimitedStreams = 0xffffffff

func newServerConn(h *hcm, w *Worker, cfg *listenerConfig, nc net.Conn) *serverConn {
	sc := &serverConn{
		h: h, w: w, cfg: cfg, nc: nc, opened: time.Now(),
		out: &bytes.Buffer{}, spare: &bytes.Buffer{}, kick: make(chan struct{}, 1), ctrl: make(chan ctrlItem, 256),
		streams: map[uint32]*stream{}, connSendWindow: 65535, peerInitWindow: 65535,
		connRecvWindow: int64(cfg.connWindow), ackedMaxStreams: unlimitedStreams,
	}
	sc.peerMaxFrame.Store(16384)
	sc.cond = sync.NewCond(&sc.mu)
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	sc.br = bufio.NewReaderSize(nc, 32<<10)
	sc.fr = http2.NewFramer(writerFunc(sc.encode), sc.br)
	sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	sc.fr.MaxHeaderListSize = 1 << 20
	sc.henc = hpack.NewEncoder(&sc.hbuf)
	return sc
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// encode is the Framer's writer: it appends to the outgoing buffer (wmu is held).
func (sc *serverConn) encode(p []byte) (int, error) {
	sc.queued.Add(int64(len(p)))
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
		buf := sc.out
		sc.out = sc.spare
		sc.wmu.Unlock()
		if buf.Len() > 0 {
			n := buf.Len()
			_ = sc.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, err := sc.nc.Write(buf.Bytes())
			sc.queued.Add(-int64(n))
			sc.h.txBytes.Add(int64(n))
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
	go sc.ctrlLoop()
	preface := make([]byte, len(clientPreface))
	_ = sc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(sc.br, preface); err != nil || string(preface) != clientPreface {
		sc.h.protocolErrors.Inc()
		sc.closedByUs.Store(true)
		return
	}
	_ = sc.nc.SetReadDeadline(time.Time{})
	sc.wmu.Lock()
	_ = sc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: sc.cfg.maxConcurrentStreams},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: sc.cfg.streamWindow},
	)
	if sc.cfg.connWindow > 65535 {
		_ = sc.fr.WriteWindowUpdate(0, sc.cfg.connWindow-65535)
	}
	sc.flush()
	sc.wmu.Unlock()
	sc.armTimers()

	for {
		f, err := sc.fr.ReadFrame()
		if err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				sc.connectionError(http2.ErrCode(ce))
			}
			return
		}
		if err := sc.onFrame(f); err != nil {
			var ce connError
			if !errors.As(err, &ce) {
				ce.code = http2.ErrCodeProtocol
			}
			sc.connectionError(ce.code)
			return
		}
	}
}

// connError is a connection error with its HTTP/2 code.
type connError struct {
	code http2.ErrCode
	why  string
}

func (e connError) Error() string { return e.code.String() + ": " + e.why }

// connectionError ends the connection as Envoy does on a codec error: a GOAWAY with the code,
// downstream_cx_protocol_error, and a close.
func (sc *serverConn) connectionError(code http2.ErrCode) {
	sc.h.protocolErrors.Inc()
	sc.goAwayNow(code)
}

func (sc *serverConn) onFrame(f http2.Frame) error {
	if sc.delayedClose.Load() {
		return nil // Envoy ignores reads while it waits to close
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return sc.onSettings(f)
	case *http2.MetaHeadersFrame:
		return sc.onHeaders(f)
	case *http2.DataFrame:
		return sc.onData(f)
	case *http2.WindowUpdateFrame:
		id, inc := f.StreamID, int64(f.Increment)
		sc.later(func() error { return sc.onWindowUpdate(id, inc) })
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			sc.later(func() error {
				sc.wmu.Lock()
				_ = sc.fr.WritePing(true, data)
				sc.flush()
				sc.wmu.Unlock()
				return nil
			})
		}
	case *http2.RSTStreamFrame:
		sc.mu.Lock()
		st := sc.streams[f.StreamID]
		if st != nil {
			st.reset_ = true // closed at once: the client may open another in its place
			sc.closeIfDoneLocked(st)
		}
		sc.mu.Unlock()
		if st != nil {
			sc.h.rxReset.Inc()
			st.abort(fmt.Errorf("client reset the stream: %v", f.ErrCode))
		}
	case *http2.GoAwayFrame:
		sc.mu.Lock()
		sc.peerGoneAway = true
		empty := len(sc.streams) == 0
		sc.mu.Unlock()
		if empty {
			sc.close("")
		}
	case *http2.PushPromiseFrame:
		return errors.New("client sent PUSH_PROMISE")
	}
	return nil
}

// onSettings applies the client's settings at once, in order with the frames around it, and
// acknowledges them once the worker gets to it. A SETTINGS ACK puts our stream cap in force.
func (sc *serverConn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		sc.mu.Lock()
		sc.ackedMaxStreams = sc.cfg.maxConcurrentStreams
		sc.mu.Unlock()
		return nil
	}
	var err error
	var tableSize *uint32
	sc.mu.Lock()
	_ = f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingInitialWindowSize:
			if s.Val > 1<<31-1 {
				err = connError{http2.ErrCodeFlowControl, "initial window too large"}
				return err
			}
			delta := int64(s.Val) - sc.peerInitWindow
			sc.peerInitWindow = int64(s.Val)
			for _, st := range sc.streams {
				st.sendWindow += delta
			}
		case http2.SettingMaxFrameSize:
			sc.peerMaxFrame.Store(s.Val)
		case http2.SettingHeaderTableSize:
			v := s.Val
			tableSize = &v
		}
		return nil
	})
	if err == nil {
		sc.flushAllLocked()
	}
	sc.cond.Broadcast()
	sc.mu.Unlock()
	if err != nil {
		return err
	}
	sc.later(func() error {
		sc.wmu.Lock()
		if tableSize != nil {
			sc.henc.SetMaxDynamicTableSizeLimit(*tableSize)
		}
		_ = sc.fr.WriteSettingsAck()
		sc.flush()
		sc.wmu.Unlock()
		return nil
	})
	return nil
}

func (sc *serverConn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return errors.New("even stream id from client")
	}
	sc.mu.Lock()
	if st := sc.streams[id]; st != nil {
		sc.mu.Unlock()
		st.recv(nil, f.StreamEnded()) // request trailers end the request body
		return nil
	}
	if id <= sc.maxClientID {
		sc.mu.Unlock()
		return errors.New("stream id went backwards")
	}
	sc.maxClientID = id
	sc.lastActive = time.Now()
	open := sc.open
	switch {
	case open >= sc.ackedMaxStreams:
		// nghttp2: "request HEADERS: max concurrent streams exceeded", a connection error.
		sc.mu.Unlock()
		return connError{http2.ErrCodeProtocol, "max concurrent streams exceeded"}
	case sc.closing || sc.drain == finalSent && sc.h.pod.pool.cfg.Codec == CodecNghttp2:
		// nghttp2 ignores a stream opened after its final GOAWAY: no reply; the client learns
		// from the GOAWAY's last stream id that it was not processed. oghttp2, Envoy 1.35's
		// default codec, has no such check and serves it.
		sc.mu.Unlock()
		return nil
	case open >= sc.cfg.maxConcurrentStreams:
		// Over a cap the client has not acknowledged yet: refuse this stream only.
		sc.mu.Unlock()
		sc.h.refused.Inc()
		sc.refuse(id)
		return nil
	}
	st := newStream(sc, id, f, sc.peerInitWindow)
	sc.streams[id] = st
	sc.open++
	sc.lastAccepted = id
	sc.atCap = sc.h.pod.pool.obs.streams(int64(sc.open), int64(sc.cfg.maxConcurrentStreams), sc.atCap)
	sc.requests++
	reqs := sc.requests
	if sc.idleTimer != nil {
		sc.idleTimer.Stop()
	}
	sc.mu.Unlock()

	sc.h.rqTotal.Inc()
	sc.h.rqHTTP2.Inc()
	sc.h.rqActive.Inc()
	st.atLimit = sc.cfg.maxRequestsPerConn > 0 && reqs >= uint64(sc.cfg.maxRequestsPerConn)
	// Booked here, in the order the HEADERS arrived: the worker dispatches a connection's
	// requests in the order it reads them.
	st.work = sc.w.BookWork(sc.h.requestCost(sc))
	go sc.h.handle(st)
	return nil
}

func (sc *serverConn) refuse(id uint32) {
	sc.h.txReset.Inc()
	sc.wmu.Lock()
	_ = sc.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
	sc.flush()
	sc.wmu.Unlock()
}

// ctrlItem is a control frame's effect, due when the worker has done the work booked before it.
type ctrlItem struct {
	at time.Time
	fn func() error
}

// later runs fn in the worker's order: an Envoy worker handles a connection's PING, SETTINGS
// and WINDOW_UPDATE frames on its own event loop, after whatever it was busy with, so a
// saturated worker answers a PING late and sends data a WINDOW_UPDATE allows late. Frames whose
// effect is only the connection's state (a SETTINGS ACK, new settings, GOAWAY) apply at once,
// keeping their order with the HEADERS around them.
func (sc *serverConn) later(fn func() error) {
	select {
	case sc.ctrl <- ctrlItem{at: sc.w.Book(0), fn: fn}:
	case <-sc.ctx.Done():
	}
}

func (sc *serverConn) ctrlLoop() {
	for {
		select {
		case <-sc.ctx.Done():
			return
		case it := <-sc.ctrl:
			if sc.w.clock.SleepUntil(sc.ctx, it.at) != nil {
				return
			}
			if err := it.fn(); err != nil {
				var ce connError
				if !errors.As(err, &ce) {
					ce.code = http2.ErrCodeProtocol
				}
				sc.connectionError(ce.code)
				return
			}
		}
	}
}
