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

// serverConn serves one downstream HTTP/2 connection on one worker, with Envoy's connection
// semantics: SETTINGS from the knobs, REFUSED_STREAM over the stream limit, the two-step
// GOAWAY drain (shutdown notice, then after drain_timeout the final GOAWAY) for
// max_requests_per_connection, max_connection_duration, idle timeout and listener updates,
// and a write buffer whose watermarks pause upstream reads.
//
// Frames are read and written with golang.org/x/net/http2's Framer and hpack. One goroutine
// reads, one writes what the stream handlers queue, and each stream has its own handler.
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

	// Stream and flow-control state, under mu; cond wakes writers waiting for window or for
	// the write buffer to drain.
	mu              sync.Mutex
	cond            *sync.Cond
	streams         map[uint32]*stream
	maxClientID     uint32
	connSendWindow  int64
	peerInitWindow  int64
	peerMaxFrame    atomic.Uint32
	connRecvUnacked int64
	requests        uint64
	drain           drainState
	drainReason     string
	closing         bool
	peerGoneAway    bool
	idleTimer       *time.Timer
	lastActive      time.Time
	settingsAcked   bool
	atCap           bool
	closeOnce       sync.Once
}

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func newServerConn(h *hcm, w *Worker, cfg *listenerConfig, nc net.Conn) *serverConn {
	sc := &serverConn{
		h: h, w: w, cfg: cfg, nc: nc, opened: time.Now(),
		out: &bytes.Buffer{}, spare: &bytes.Buffer{}, kick: make(chan struct{}, 1),
		streams: map[uint32]*stream{}, connSendWindow: 65535, peerInitWindow: 65535,
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

// serve runs the connection until it closes. The caller has counted the connection open.
func (sc *serverConn) serve() {
	defer sc.close("")
	go sc.writeLoop()
	preface := make([]byte, len(clientPreface))
	_ = sc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(sc.br, preface); err != nil || string(preface) != clientPreface {
		sc.h.protocolErrors.Inc()
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
				sc.h.protocolErrors.Inc()
				sc.goAwayNow(http2.ErrCode(ce))
			}
			return
		}
		if err := sc.onFrame(f); err != nil {
			sc.h.protocolErrors.Inc()
			sc.goAwayNow(http2.ErrCodeProtocol)
			return
		}
	}
}

func (sc *serverConn) onFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return sc.onSettings(f)
	case *http2.MetaHeadersFrame:
		return sc.onHeaders(f)
	case *http2.DataFrame:
		return sc.onData(f)
	case *http2.WindowUpdateFrame:
		return sc.onWindowUpdate(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			sc.wmu.Lock()
			_ = sc.fr.WritePing(true, f.Data)
			sc.flush()
			sc.wmu.Unlock()
		}
	case *http2.RSTStreamFrame:
		sc.mu.Lock()
		st := sc.streams[f.StreamID]
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

func (sc *serverConn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		sc.mu.Lock()
		sc.settingsAcked = true
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
				err = errors.New("initial window too large")
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
	sc.cond.Broadcast()
	sc.mu.Unlock()
	if err != nil {
		return err
	}
	sc.wmu.Lock()
	if tableSize != nil {
		sc.henc.SetMaxDynamicTableSizeLimit(*tableSize)
	}
	_ = sc.fr.WriteSettingsAck()
	sc.flush()
	sc.wmu.Unlock()
	return nil
}

func (sc *serverConn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if f.StreamID == 0 {
		sc.connSendWindow += int64(f.Increment)
		if sc.connSendWindow > 1<<31-1 {
			return errors.New("connection window overflow")
		}
	} else if st := sc.streams[f.StreamID]; st != nil {
		st.sendWindow += int64(f.Increment)
	}
	sc.cond.Broadcast()
	return nil
}

func (sc *serverConn) onData(f *http2.DataFrame) error {
	n := int64(f.Length)
	sc.mu.Lock()
	st := sc.streams[f.StreamID]
	sc.connRecvUnacked += n
	ackConn := sc.connRecvUnacked >= int64(sc.cfg.connWindow)/2
	if ackConn {
		n2 := sc.connRecvUnacked
		sc.connRecvUnacked = 0
		defer sc.sendWindowUpdate(0, n2)
	}
	sc.mu.Unlock()
	sc.h.rxBytes.Add(n)
	if st == nil {
		return nil // a stream already finished or reset: the bytes still count against the connection window
	}
	if !st.recv(f.Data(), f.StreamEnded()) {
		st.reset(http2.ErrCodeFlowControl)
		st.abort(errors.New("client exceeded the stream's flow-control window"))
	}
	return nil
}

func (sc *serverConn) sendWindowUpdate(id uint32, n int64) {
	if n <= 0 {
		return
	}
	sc.wmu.Lock()
	_ = sc.fr.WriteWindowUpdate(id, uint32(n))
	sc.flush()
	sc.wmu.Unlock()
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
	switch {
	case sc.drain == finalSent || sc.closing:
		// After the final GOAWAY the client must not open streams; refuse so it retries elsewhere.
		sc.mu.Unlock()
		sc.refuse(id)
		return nil
	case uint32(len(sc.streams)) >= sc.cfg.maxConcurrentStreams:
		sc.mu.Unlock()
		sc.h.refused.Inc()
		sc.h.pod.pool.obs.refused.Add(1)
		sc.refuse(id)
		return nil
	}
	st := newStream(sc, id, f, sc.peerInitWindow)
	sc.streams[id] = st
	sc.atCap = sc.h.pod.pool.obs.streams(int64(len(sc.streams)), int64(sc.cfg.maxConcurrentStreams), sc.atCap)
	sc.requests++
	reqs := sc.requests
	if sc.idleTimer != nil {
		sc.idleTimer.Stop()
	}
	sc.mu.Unlock()

	sc.h.rqTotal.Inc()
	sc.h.rqHTTP2.Inc()
	sc.h.rqActive.Inc()
	// Envoy counts every request at or over the limit, not once per connection, and starts the
	// drain on the first of them.
	if m := sc.cfg.maxRequestsPerConn; m > 0 && reqs >= uint64(m) {
		sc.h.maxRequestsReached.Inc()
		sc.startDrain("max_requests_per_connection")
	}
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
