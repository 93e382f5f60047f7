package emulator

import (
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/runner/model"
)

// The HTTP/2 codec session: what each frame means, as QUICHE's OgHttp2Session decides it (Envoy
// 1.35's default codec; quiche/http2/adapter/oghttp2_session.cc) under Envoy's glue
// (source/common/http/http2/codec_impl.cc: ConnectionImpl::Http2Visitor, onBeginHeaders,
// onInvalidFrame, onFrameSend), and where it differs, as nghttp2 decides it
// (lib/nghttp2_session.c) for --http2-codec nghttp2. Errors take one of Envoy's three paths
// (h2errors.go): a GOAWAY that reaches the wire, a close with nothing on the wire when one of
// Envoy's callbacks fails, or a stream reset.

// session is the codec's connection state; the dispatcher goroutine owns it.
type session struct {
	latched          bool // a connection error: input is ignored from here on
	fatal            bool // a visitor callback failed: Envoy sends nothing before it closes
	flood            bool // the failure was a flood: not counted as a protocol error
	closeScheduled   bool
	queue            []outFrame // frames queued while dispatching, sent after the dispatch
	highestProcessed uint32     // the highest stream the session created
	highestReceived  uint32     // the highest stream id in any frame header
	lastFrame        frameHeader
	goAwayRecv       bool
	goAwayRecvLast   uint32
	ignoreInput      bool // nghttp2 stopped reading after the client's GOAWAY

	// The header block being decoded: its stream (nil when the block is ignored), whether it
	// is the request's trailers, and its validation.
	block        *stream
	blockTrailer bool
	blockEnd     bool // the block's HEADERS carries END_STREAM
	check        headerCheck
	rstTokens    float64 // nghttp2's stream reset rate limit
	rstRefill    int64
}

func (sc *serverConn) og() bool { return sc.codec != CodecNghttp2 }

// h2stream is the stream of id the session still has open: not yet closed in HTTP/2's sense.
func (sc *serverConn) h2stream(id uint32) *stream {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if st := sc.streams[id]; st != nil && !st.h2closed {
		return st
	}
	return nil
}

// startSession queues the server preface: SETTINGS and the connection WINDOW_UPDATE that
// raises the receive window (codec_impl.cc sendSettingsHelper, sendSettings). oghttp2 writes
// the settings sorted by id (a std::map in SpdySettingsIR); nghttp2 in the order Envoy submits
// them. Both go out when the worker has dispatched the first read.
func (sc *serverConn) startSession() {
	cfg := sc.cfg
	var sets []http2.Setting
	if sc.og() {
		sets = []http2.Setting{{ID: http2.SettingHeaderTableSize, Val: 4096},
			{ID: http2.SettingMaxConcurrentStreams, Val: cfg.MaxConcurrentStreams},
			{ID: http2.SettingInitialWindowSize, Val: cfg.StreamWindow},
			{ID: http2.SettingEnableConnectProtocol, Val: 0}}
	} else {
		sets = []http2.Setting{{ID: http2.SettingHeaderTableSize, Val: 4096},
			{ID: http2.SettingEnableConnectProtocol, Val: 0},
			{ID: http2.SettingMaxConcurrentStreams, Val: cfg.MaxConcurrentStreams},
			{ID: http2.SettingInitialWindowSize, Val: cfg.StreamWindow}}
	}
	sc.enqueue(outFrame{typ: http2.FrameSettings, settings: sets})
	if cfg.ConnWindow > 65535 {
		sc.enqueue(outFrame{typ: http2.FrameWindowUpdate, inc: cfg.ConnWindow - 65535})
	}
	sc.sess.rstTokens = nghttp2ResetBurst
}

// onCommonHeader is OgHttp2Session::OnCommonHeader, then Envoy's Http2Visitor::OnFrameHeader:
// a CONTINUATION must follow a frame of its own stream, and Envoy counts the frame against its
// flood limits (ConnectionImpl::onBeforeFrameReceived, trackInboundFrames).
func (sc *serverConn) onCommonHeader(h frameHeader) bool {
	s := &sc.sess
	if s.ignoreInput {
		return false
	}
	s.highestReceived = max(s.highestReceived, h.stream)
	if sc.og() && h.typ == http2.FrameContinuation && s.lastFrame.stream != h.stream {
		sc.failVisitor() // the visitor rejects it: SPDY_STOP_PROCESSING, nothing sent
		return false
	}
	s.lastFrame = h
	if h.typ == http2.FrameData || h.typ == http2.FramePing && h.has(http2.FlagPingAck) {
		return true // DATA is tracked when its payload is in; a PING ACK is never tracked
	}
	if !sc.og() && h.typ == http2.FramePriority {
		return true // nghttp2 1.65+ drops PRIORITY frames before any callback
	}
	empty := h.length == 0
	end := h.typ == http2.FrameHeaders && h.has(http2.FlagHeadersEndStream)
	if flood, st := sc.pc.trackInbound(sc.h, h.typ, end, empty); flood {
		sc.failFlood(st)
		return false
	}
	return true
}

func (sc *serverConn) onUnknownFrame(frameHeader) bool { return true }

// onError is a decoding error: oghttp2 latches a GOAWAY with the error's code (OnError ->
// LatchErrorAndNotify, "ParseError"); nghttp2 terminates the session with its own reason.
func (sc *serverConn) onError(e framerError, why string) {
	if sc.og() {
		sc.latch(e.code(), "ParseError")
		return
	}
	sc.latch(e.code(), why)
}

// onDataFrameHeader is OgHttp2Session::OnDataFrameHeader (nghttp2:
// session_on_data_received_fail_fast): DATA for a stream that never existed is a connection
// error, for one already closed it is dropped; then the windows.
func (sc *serverConn) onDataFrameHeader(h frameHeader) bool {
	s := &sc.sess
	st := sc.h2stream(h.stream)
	if st == nil {
		if h.stream > s.highestProcessed {
			if sc.og() {
				sc.latch(http2.ErrCodeProtocol, "kWrongFrameSequence")
			} else {
				sc.latch(http2.ErrCodeProtocol, "DATA: stream in idle")
			}
			return false
		}
		return true // a closed stream: the bytes still count against the connection window
	}
	if !sc.og() && st.recvDone {
		sc.latch(http2.ErrCodeStreamClosed, "DATA: stream in half-closed(remote)")
		return false
	}
	sc.mu.Lock()
	overConn := int64(h.length) > sc.connRecvWindow
	overStream := int64(h.length) > st.recvWindow
	sc.mu.Unlock()
	if overConn {
		if sc.og() {
			sc.latch(http2.ErrCodeFlowControl, "FlowControlError")
		} else {
			sc.failVisitor() // nghttp2 reports it to Envoy's callback first
		}
		return false
	}
	if overStream {
		sc.resetStream(st, http2.ErrCodeFlowControl)
	}
	return true
}

// onStreamFrameData takes a DATA frame's data: counted against the windows even for a stream
// that is gone (MarkDataBuffered), checked against the request's content-length.
func (sc *serverConn) onStreamFrameData(id uint32, data []byte) bool {
	n := int64(len(data))
	sc.mu.Lock()
	sc.connRecvWindow -= n
	sc.mu.Unlock()
	sc.h.RxBytes.Add(n)
	st := sc.h2stream(id)
	if st == nil || st.reset_ {
		sc.consume(nil, n, true) // dropped: the connection window moves on
		return true
	}
	if st.remaining >= 0 {
		if n > st.remaining {
			st.remaining = -1
			sc.contentLengthError(st)
			sc.consume(nil, n, true)
			return true
		}
		st.remaining -= n
	}
	sc.requestData(st)
	st.recv(data, false)
	return true
}

// onStreamPadding counts a DATA frame's padding against both windows (OnStreamPadLength) and
// gives it back at once: padding is never buffered.
func (sc *serverConn) onStreamPadding(id uint32, n int) bool {
	sc.mu.Lock()
	sc.connRecvWindow -= int64(n)
	st := sc.streams[id]
	if st != nil && !st.h2closed {
		st.recvWindow -= int64(n)
	} else {
		st = nil
	}
	sc.mu.Unlock()
	sc.consume(st, int64(n), true)
	return true
}

// onDataEnd is Envoy's empty-frame tracking for a DATA frame once its payload is in.
func (sc *serverConn) onDataEnd(h frameHeader, payload int) bool {
	if flood, st := sc.pc.trackInbound(sc.h, http2.FrameData, h.has(http2.FlagDataEndStream), payload == 0); flood {
		sc.failFlood(st)
		return false
	}
	return true
}

// onStreamEnd is the client's END_STREAM (OnStreamEnd): the request is complete, unless its
// body fell short of its content-length.
func (sc *serverConn) onStreamEnd(id uint32) bool {
	st := sc.h2stream(id)
	if st == nil {
		return true
	}
	if st.reset_ {
		return true
	}
	if st.remaining > 0 {
		sc.contentLengthError(st)
		return true
	}
	st.recv(nil, true)
	return true
}

// contentLengthError is HandleContentLengthError: RST_STREAM PROTOCOL_ERROR; when the frame
// that showed it is HEADERS, Envoy's onInvalidFrame counts it too (its answer is ignored).
func (sc *serverConn) contentLengthError(st *stream) {
	if sc.sess.lastFrame.typ == http2.FrameHeaders {
		sc.h.RxMessagingError.Inc()
	}
	sc.resetStream(st, http2.ErrCodeProtocol)
}

// onHeaders is OgHttp2Session::OnHeaders, at the start of a HEADERS frame (nghttp2:
// session_on_request_headers_received and session_on_headers_received): a new stream, or the
// request's trailers.
func (sc *serverConn) onHeaders(h frameHeader, prio *priorityFields) bool {
	s := &sc.sess
	id, fin := h.stream, h.has(http2.FlagHeadersEndStream)
	s.block, s.blockTrailer, s.blockEnd = nil, false, fin
	if id%2 == 0 {
		sc.newStreamError("InvalidNewStreamId")
		return false
	}
	if st := sc.h2stream(id); st != nil {
		if !sc.og() && st.recvDone {
			sc.failVisitor() // "HEADERS: stream closed"
			return false
		}
		if fin || !sc.og() { // trailers (nghttp2 takes any HEADERS on an open stream as trailers)
			s.block, s.blockTrailer = st, true
			return true
		}
	}
	if id <= s.highestProcessed {
		if !sc.og() {
			return true // nghttp2 ignores a stream it already closed; its block is still decoded
		}
		sc.latch(http2.ErrCodeProtocol, "InvalidNewStreamId")
		return false
	}
	if !sc.og() {
		sc.mu.Lock()
		final := sc.closing || sc.drain.State == model.FinalSent
		sc.mu.Unlock()
		if final {
			return true // "We just ignore stream after GOAWAY was sent": no reply at all
		}
	}
	if !sc.og() && prio != nil && prio.dependency == id {
		sc.failVisitor() // "request HEADERS: depend on itself"
		return false
	}
	sc.mu.Lock()
	open, acked := sc.open, sc.ackedMaxStreams
	sc.mu.Unlock()
	switch model.AdmitStream(open, acked, sc.cfg.MaxConcurrentStreams) {
	case model.ConnError:
		// Over an acknowledged cap, oghttp2 (for parity with nghttp2) and nghttp2 call Envoy's
		// onInvalidFrame, which fails: the connection closes with nothing sent.
		sc.failVisitor()
		return false
	case model.Refuse:
		// Over a cap not yet acknowledged: this stream is refused
		// (onInvalidFrame(kRefusedStream): http2.stream_refused_errors).
		sc.h.Refused.Inc()
		sc.enqueue(outFrame{typ: http2.FrameRSTStream, stream: id, code: http2.ErrCodeRefusedStream})
		s.highestProcessed = max(s.highestProcessed, id)
		return true
	}
	s.block = sc.createStream(id, fin)
	return true
}

// newStreamError is a HEADERS on an even stream id: oghttp2's GOAWAY, or nghttp2's call to
// Envoy's callback.
func (sc *serverConn) newStreamError(why string) {
	if sc.og() {
		sc.latch(http2.ErrCodeProtocol, why)
		return
	}
	sc.failVisitor()
}

func (sc *serverConn) onContinuation(frameHeader) bool { return true }

// onHeaderBlockStart is PassthroughHeadersHandler::OnHeaderBlockStart: Envoy's onBeginHeaders
// makes its stream (or, for trailers, counts http2.trailers).
func (sc *serverConn) onHeaderBlockStart(id uint32) bool {
	s := &sc.sess
	st := s.block
	if st == nil {
		return true
	}
	s.check.start(sc.codec, s.blockTrailer, s.blockEnd, sc.h)
	if s.blockTrailer {
		sc.h.Trailers.Inc()
		return true
	}
	if !sc.h.beginStream(st) {
		s.block = nil // the connection closed under the dispatch
		return true
	}
	sc.pc.opened++
	return true
}

// onHeaderField validates one decoded field and hands it to Envoy (saveHeader).
func (sc *serverConn) onHeaderField(id uint32, f hpack.HeaderField) bool {
	s := &sc.sess
	st := s.block
	if st == nil || st.reset_ {
		return true
	}
	switch r := s.check.field(f); r {
	case headerOK:
		st.addHeader(f, s.blockTrailer)
	case headerSkip:
	default:
		return sc.headerStatus(st, r)
	}
	return true
}

// onHeaderFrameEnd is the block's end (OnHeaderBlockEnd, OnHeaderFrameEnd): the block as a
// whole must be a valid request (or trailers), then Envoy decodes the request.
func (sc *serverConn) onHeaderFrameEnd(id uint32) bool {
	s := &sc.sess
	st := s.block
	s.block = nil
	if st == nil || st.reset_ {
		return true
	}
	if !s.check.finish() {
		return sc.headerStatus(st, headerMessaging)
	}
	if s.blockTrailer {
		return true
	}
	st.remaining = s.check.contentLength
	sc.h.decodeHeaders(st)
	return true
}

// headerStatus is OgHttp2Session::OnHeaderStatus for a field or block that failed: a stream
// reset, and for invalid requests Envoy's onInvalidFrame, which (stream_error_on_invalid_http_
// message off, as Istio leaves it) fails and takes the connection down with nothing sent.
func (sc *serverConn) headerStatus(st *stream, r headerResult) bool {
	if r == headerRST {
		sc.resetStream(st, http2.ErrCodeInternal)
		return true
	}
	sc.h.RxMessagingError.Inc()
	if sc.cfg.StreamErrorOnInvalidMessage() {
		sc.resetStream(st, http2.ErrCodeProtocol)
		return true
	}
	// The RST_STREAM oghttp2 queued is never sent, and the stream lives until the connection
	// manager resets all of them as it closes the connection.
	sc.failVisitor()
	return false
}

// onPushPromise: a client may not push (OnPushPromise; nghttp2 through Envoy's callback).
func (sc *serverConn) onPushPromise(uint32, uint32) bool {
	if sc.og() {
		sc.latch(http2.ErrCodeProtocol, "InvalidPushPromise")
	} else {
		sc.failVisitor()
	}
	return false
}

// onBadStreamID is a frame on a stream its type does not allow (IsValidHTTP2FrameStreamId):
// oghttp2's decoder error SPDY_INVALID_STREAM_ID. nghttp2 reports most of them to Envoy's
// callback, sends a GOAWAY for DATA on stream 0, and drops PRIORITY without looking.
func (sc *serverConn) onBadStreamID(h frameHeader) {
	if sc.og() {
		sc.latch(http2.ErrCodeProtocol, "ParseError")
		return
	}
	switch h.typ {
	case http2.FrameData:
		sc.latch(http2.ErrCodeProtocol, "DATA: stream_id == 0")
	case http2.FramePriority:
		sc.dec.stopped = false // ignored; decoding goes on
	default:
		sc.failVisitor()
	}
}

// createStream is OgHttp2Session::CreateStream: the session's stream, counted against the cap.
// Envoy's stream follows with the header block (onHeaderBlockStart). A connection closed while
// its last read was being dispatched (the writer saw the client go) makes no more streams: in
// Envoy the close and the dispatch run on one thread, and ConnectionImpl::closeSocket ends the
// read (onReadReady dispatches nothing after it), so no stream outlives resetAllStreams.
func (sc *serverConn) createStream(id uint32, fin bool) *stream {
	st := newStream(sc, id, fin)
	sc.mu.Lock()
	if sc.closing {
		sc.mu.Unlock()
		sc.dec.stop()
		return nil
	}
	sc.streams[id] = st
	sc.open++
	sc.lastActive = time.Now()
	if sc.idleTimer != nil {
		sc.idleTimer.Stop()
	}
	sc.mu.Unlock()
	sc.sess.highestProcessed = max(sc.sess.highestProcessed, id)
	return st
}
