package emulator

import (
	"context"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// How a dispatch's frames and errors reach the wire, as Envoy 1.35 runs its codec
// (codec_impl.cc ConnectionImpl::dispatch, sendPendingFrames, onFrameSend; conn_manager_impl.cc
// ConnectionManagerImpl::onData, handleCodecError, doConnectionClose):
//   - frames the session queues while it dispatches a read are written when the dispatch ends,
//     which on the emulated worker is when it has done the read's work;
//   - a connection error the session latches itself queues a GOAWAY with its code, which is
//     written; Envoy then fails the send on purpose, counts downstream_cx_protocol_error and
//     closes after flushing (FlushWriteAndDelay, delayed_close_timeout);
//   - when one of Envoy's own callbacks fails (an invalid request, a CONTINUATION on the wrong
//     stream, a flood), dispatch returns before anything is sent: the client sees the close
//     and nothing else;
//   - a stream error queues RST_STREAM and resets the stream; the connection lives on.

// outFrame is a frame the session queued while dispatching (oghttp2's frames_).
type outFrame struct {
	typ       http2.FrameType
	stream    uint32
	code      http2.ErrCode
	last      uint32 // GOAWAY
	debug     string // GOAWAY
	ack       bool   // SETTINGS, PING
	ping      [8]byte
	inc       uint32          // WINDOW_UPDATE
	settings  []http2.Setting // the server's SETTINGS
	tableSize *uint32         // a SETTINGS ack applies the client's HEADER_TABLE_SIZE
}

// enqueue queues a frame for the end of the dispatch. Once an error GOAWAY is queued nothing
// more is, and only the RST_STREAMs queued before it go out with it
// (OgHttp2Session::EnqueueFrame, PrepareForImmediateGoAway).
func (sc *serverConn) enqueue(f outFrame) {
	s := &sc.sess
	if s.latched {
		return
	}
	s.queue = append(s.queue, f)
}

// lastStreamID is the last stream id an error GOAWAY names: the highest stream the session
// created (oghttp2's highest_processed_stream_id_, nghttp2's last_proc_stream_id).
func (sc *serverConn) errorLastStream() uint32 { return sc.sess.highestProcessed }

// latch is a connection error the session raises itself (oghttp2 LatchErrorAndNotify; nghttp2
// nghttp2_session_terminate_session_with_reason): a GOAWAY with the code goes out at the end of
// the dispatch, and the connection closes.
func (sc *serverConn) latch(code http2.ErrCode, debug string) {
	s := &sc.sess
	if s.latched {
		return
	}
	kept := s.queue[:0]
	for _, f := range s.queue {
		// The server's first SETTINGS still goes first if it has not been sent.
		if f.typ == http2.FrameRSTStream || f.typ == http2.FrameSettings && !f.ack {
			kept = append(kept, f)
		}
	}
	s.queue = append(kept, outFrame{typ: http2.FrameGoAway, last: sc.errorLastStream(), code: code, debug: debug})
	s.latched = true
	sc.goingAway.Store(true)
	sc.dec.stop()
}

// failVisitor is one of Envoy's callbacks failing (fatal_visitor_callback_failure_): dispatch
// returns a codec protocol error before sending anything.
func (sc *serverConn) failVisitor() {
	s := &sc.sess
	if s.latched && s.fatal {
		return
	}
	s.latched, s.fatal = true, true
	sc.goingAway.Store(true)
	sc.dec.stop()
}

// failFlood is a flood limit tripping inside dispatch: the same path as a failed callback, but
// counted in the flood's counter (nil: counted when it first tripped) and not as a protocol
// error.
func (sc *serverConn) failFlood(counter *Stat) {
	s := &sc.sess
	if s.latched && s.fatal {
		return
	}
	if counter != nil {
		counter.Inc()
	}
	s.flood = true
	sc.failVisitor()
}

// endDispatch schedules what the dispatch queued for when the worker has done its work.
func (sc *serverConn) endDispatch() {
	s := &sc.sess
	df := sc.pendingFlush
	sc.pendingFlush = nil
	if df == nil {
		df = newDispatchFlush()
	}
	if s.closeScheduled || len(s.queue) == 0 && !s.latched {
		df.ready(nil, false) // nothing queued for the streams to go behind
		return
	}
	q, fatal, flood := s.queue, s.fatal, s.flood
	s.queue = nil
	if !sc.og() {
		q = nghttp2Order(q)
	}
	closing := s.latched
	if closing {
		s.closeScheduled = true
	}
	df.ready(func() { sc.flushDispatch(q, closing, fatal, flood) }, !closing)
	b := sc.book(0)
	sc.order.push(orderItem{b: b, end: df.run})
}

// dispatchFlush is the writing of what one dispatch queued. Envoy sends it as the dispatch
// ends, and the responses of the dispatch's streams come later (the upstream replies are read
// after it), so they can never overtake it. The emulator writes it when the worker has done
// the dispatch's work, or earlier if one of its streams has a response first: the order on the
// wire is Envoy's, and no response waits for work queued behind its own. A dispatch that ends
// the connection is written only in the worker's order.
type dispatchFlush struct {
	queued chan struct{} // closed once the dispatch has ended and flush is set
	once   sync.Once
	flush  func()
	early  bool // a response may write it first
}

func newDispatchFlush() *dispatchFlush { return &dispatchFlush{queued: make(chan struct{})} }

// ready is the dispatch's end: what it queued, if anything, and whether a response may write it.
func (d *dispatchFlush) ready(flush func(), early bool) {
	d.flush, d.early = flush, early
	close(d.queued)
}

func (d *dispatchFlush) run() {
	d.once.Do(func() {
		if d.flush != nil {
			d.flush()
		}
	})
}

// before is called by a response of the dispatch's streams before it writes: it waits for the
// dispatch to have ended (decoding a read takes the dispatcher moments), then writes its frames.
func (d *dispatchFlush) before(ctx context.Context) error {
	select {
	case <-d.queued:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if d.early {
		d.run()
	}
	return nil
}

// nghttp2Order is the order nghttp2 sends what a dispatch queued: SETTINGS (its own and
// acknowledgements) and PING from the urgent queue first, then the rest as queued
// (nghttp2_session.c nghttp2_session_add_item, nghttp2_session_pop_next_ob_item). oghttp2 has
// one queue, in order (OgHttp2Session::EnqueueFrame).
func nghttp2Order(q []outFrame) []outFrame {
	out := make([]outFrame, 0, len(q))
	for _, f := range q {
		if f.typ == http2.FrameSettings || f.typ == http2.FramePing {
			out = append(out, f)
		}
	}
	for _, f := range q {
		if f.typ != http2.FrameSettings && f.typ != http2.FramePing {
			out = append(out, f)
		}
	}
	return out
}

// flushDispatch writes a dispatch's frames, then closes the connection as Envoy's connection
// manager does when the dispatch failed.
func (sc *serverConn) flushDispatch(q []outFrame, closing, fatal, flood bool) {
	if fatal {
		if !flood {
			sc.h.ProtocolErrors.Inc()
		}
		sc.closeWithCodecError()
		return
	}
	// The whole dispatch's frames go into the buffer before the writer may take any
	// (sendPendingFrames runs once dispatch is done): that is what Envoy's outbound limits see.
	sc.wmu.Lock()
	for _, f := range q {
		sc.writeQueuedLocked(f)
	}
	sc.flush()
	ok := sc.pc.checkOutbound(sc.h)
	sc.wmu.Unlock()
	if closing { // a GOAWAY with an error code was written: onFrameSend fails the dispatch
		sc.h.ProtocolErrors.Inc()
		sc.closeWithCodecError()
		return
	}
	if !ok { // the dispatch's frames passed a limit
		sc.closeWithCodecError()
	}
}

// closeWithCodecError is handleCodecError: the connection's streams are reset (DPE), then it
// closes after flushing what was written.
func (sc *serverConn) closeWithCodecError() { sc.closeAfterFlush() }

// writeQueuedLocked writes one queued frame (wmu held).
func (sc *serverConn) writeQueuedLocked(f outFrame) {
	if sc.wclosed {
		return
	}
	switch f.typ {
	case http2.FrameSettings:
		if f.ack {
			if f.tableSize != nil {
				sc.henc.SetMaxDynamicTableSizeLimit(*f.tableSize)
			}
			_ = sc.fr.WriteSettingsAck()
			sc.counted(true, false)
		} else {
			_ = sc.fr.WriteSettings(f.settings...)
			sc.counted(false, false)
			close(sc.prefaced)
		}
	case http2.FramePing:
		_ = sc.fr.WritePing(true, f.ping)
		sc.counted(true, false)
	case http2.FrameWindowUpdate:
		_ = sc.fr.WriteWindowUpdate(f.stream, f.inc)
		sc.counted(false, false)
	case http2.FrameRSTStream:
		sc.h.TxReset.Inc()
		_ = sc.fr.WriteRSTStream(f.stream, f.code)
		sc.counted(true, false)
	case http2.FrameGoAway:
		_ = sc.fr.WriteGoAway(f.last, f.code, []byte(f.debug))
		sc.counted(false, false)
	}
}

// counted books one frame written into the connection's buffer against Envoy's outbound limits
// (wmu held): ConnectionImpl::addOutboundFrameFragment. Control frames are PING and SETTINGS
// acknowledgements and RST_STREAM (onBeforeFrameSend).
func (sc *serverConn) counted(ctrl, data bool) {
	sc.outFrames++
	if ctrl {
		sc.outCtrl++
	}
	sc.pc.pending(ctrl, data)
}

// afterWrite checks the outbound limits after a frame written outside a dispatch (a response
// from the upstream, a timer): past them Envoy closes without flushing
// (onProtocolConstraintViolation, ConnectionCloseType::NoFlush).
func (sc *serverConn) afterWrite() {
	if sc.pc.checkOutbound(sc.h) {
		return
	}
	sc.misattributed.Store(true)
	go sc.closeByUs("outbound flood")
}

// resetStream is a stream error raised while dispatching: RST_STREAM at the end of the dispatch,
// the stream closed at once so that nothing more of it goes out.
func (sc *serverConn) resetStream(st *stream, code http2.ErrCode) {
	sc.mu.Lock()
	if st.reset_ {
		sc.mu.Unlock()
		return
	}
	st.reset_, st.endPending = true, false
	st.pending.Reset()
	sc.closeIfDoneLocked(st)
	sc.cond.Broadcast()
	sc.mu.Unlock()
	sc.enqueue(outFrame{typ: http2.FrameRSTStream, stream: st.id, code: code})
	// oghttp2 closes the stream once its RST is written: Envoy's onStreamClose sees a remote
	// reset (downstream_rq_rx_reset), and the connection manager destroys its stream.
	st.resetReason = "local"
	sc.streamReset(st, errStreamReset)
}

// streamReset ends Envoy's stream of a stream the codec closed by a reset
// (ActiveStream::onResetStream: downstream_rq_rx_reset): its handler stops, and one that had not
// started yet never does.
func (sc *serverConn) streamReset(st *stream, why error) {
	sc.mu.Lock()
	first := !st.resetCounted
	st.resetCounted = true
	st.reset_ = true
	sc.closeIfDoneLocked(st)
	sc.mu.Unlock()
	if first && st.envoy && !st.ended {
		sc.h.RqRxReset.Inc()
	}
	st.abort(why)
	if st.state.CompareAndSwap(streamQueued, streamDone) {
		sc.mu.Lock()
		st.released = true
		sc.mu.Unlock()
		sc.streamDone(st)
	}
}

// clientReset is the client's RST_STREAM on an open stream: http2.rx_reset, and the stream is
// reset (ConnectionImpl::onRstStream, ActiveStream::onResetStream).
func (sc *serverConn) clientReset(st *stream, code http2.ErrCode) {
	sc.mu.Lock()
	st.reset_, st.recvDone = true, true
	sc.closeIfDoneLocked(st)
	sc.mu.Unlock()
	sc.h.RxReset.Inc()
	st.resetReason = "remote"
	sc.streamReset(st, errClientReset)
}

// nghttp2's default stream reset rate limit (nghttp2_session.h NGHTTP2_DEFAULT_STREAM_RESET_*):
// a burst of 1000 resets, refilled at 33 a second, then a GOAWAY INTERNAL_ERROR
// (session_update_stream_reset_ratelim).
const (
	nghttp2ResetBurst = 1000
	nghttp2ResetRate  = 33
)

func (sc *serverConn) takeResetToken() bool {
	s := &sc.sess
	now := time.Now().Unix()
	if s.rstRefill != 0 && now > s.rstRefill {
		s.rstTokens = min(nghttp2ResetBurst, s.rstTokens+float64(nghttp2ResetRate*(now-s.rstRefill)))
	}
	s.rstRefill = now
	if s.rstTokens < 1 {
		return false
	}
	s.rstTokens--
	return true
}
