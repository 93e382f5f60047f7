package emulator

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stream is one request on a serverConn: its headers, its body as it arrives, and the
// response side with its own send buffer under HTTP/2 flow control and the connection's
// write-buffer watermarks.
type stream struct {
	sc        *serverConn
	id        uint32
	method    string
	path      string
	authority string
	header    http.Header
	started   time.Time
	// atLimit: this request reaches max_requests_per_connection; the worker counts it and
	// starts the connection's drain when it takes the request up (hcm.handle).
	atLimit bool
	work    Booking // the worker's work on the request's HEADERS and filters
	ctx     context.Context
	cancel  context.CancelCauseFunc

	// Request body, filled by the read loop.
	bmu        sync.Mutex
	bcond      *sync.Cond
	body       bytes.Buffer
	bodyEnded  bool
	hasBody    bool // the request's HEADERS did not end the stream: a body follows
	bodyErr    error
	unconsumed int64 // bytes received while the buffer was over its limit, not yet given back

	// Under sc.mu: window bookkeeping, and the response side.
	recvWindow int64 // bytes the client may still send on this stream
	consumed   int64 // consumed and not yet returned in a WINDOW_UPDATE
	recvDone   bool  // the client ended its side: no more stream WINDOW_UPDATEs
	sendWindow int64
	pending    bytes.Buffer // response bytes waiting for the client's windows
	endPending bool         // END_STREAM goes out with the last pending byte
	blocked    bool         // on sc.blocked
	reset_     bool         // RST_STREAM sent: nothing more goes out
	h2closed   bool         // closed in HTTP/2's sense: no longer counted against the cap

	wroteHeader bool
	ended       bool
	status      int
	idle        *time.Timer
}

func newStream(sc *serverConn, id uint32, f *http2.MetaHeadersFrame, window int64) *stream {
	st := &stream{
		sc: sc, id: id, started: time.Now(), sendWindow: window,
		method:     f.PseudoValue("method"),
		path:       f.PseudoValue("path"),
		authority:  f.PseudoValue("authority"),
		header:     make(http.Header, len(f.Fields)),
		bodyEnded:  f.StreamEnded(),
		hasBody:    !f.StreamEnded(),
		recvDone:   f.StreamEnded(),
		recvWindow: int64(sc.cfg.streamWindow),
	}
	st.bcond = sync.NewCond(&st.bmu)
	for _, hf := range f.RegularFields() {
		st.header.Add(hf.Name, hf.Value)
	}
	st.ctx, st.cancel = context.WithCancelCause(sc.ctx)
	if d := sc.cfg.streamIdleTimeout; d > 0 {
		st.bmu.Lock() // the timer's function may run before this assignment is visible
		st.idle = time.AfterFunc(d, st.onIdleTimeout)
		st.bmu.Unlock()
	}
	return st
}

func (st *stream) touch() {
	st.bmu.Lock()
	idle := st.idle
	st.bmu.Unlock()
	if idle != nil {
		idle.Reset(st.sc.cfg.streamIdleTimeout)
	}
}

// onIdleTimeout is Envoy's stream_idle_timeout: 408 if nothing was sent yet, else a reset.
func (st *stream) onIdleTimeout() {
	st.sc.h.rqIdleTimeout.Inc()
	if !st.wroteHeader {
		_ = st.respond(http.StatusRequestTimeout, "stream timeout")
	} else {
		st.reset(http2.ErrCodeCancel)
	}
	st.abort(errors.New("stream idle timeout"))
}

// recv appends request body bytes; end marks the end of the body. It reports false when the
// client sent more than the stream's window allowed (a FLOW_CONTROL_ERROR). The bytes go back
// to the client at once unless the stream's buffer is over its limit (Envoy stops giving
// window to a stream whose buffer is overrun), and then as the upstream reads them.
func (st *stream) recv(p []byte, end bool) bool {
	sc := st.sc
	sc.mu.Lock()
	st.recvWindow -= int64(len(p))
	within := st.recvWindow >= 0
	sc.mu.Unlock()
	if !within {
		return false
	}
	st.bmu.Lock()
	st.body.Write(p)
	overrun := int64(st.body.Len()) > sc.cfg.streamBufferLimit()
	if overrun {
		st.unconsumed += int64(len(p))
	}
	if end {
		st.bodyEnded = true
	}
	st.bcond.Broadcast()
	st.bmu.Unlock()
	if end {
		sc.mu.Lock()
		sc.endRemoteLocked(st)
		sc.mu.Unlock()
	}
	if !overrun {
		sc.consume(st, int64(len(p)))
	}
	st.touch()
	return true
}

// Read reads the request body for the upstream; once the buffer is below half its limit, the
// bytes held back are given back to the client.
func (st *stream) Read(p []byte) (int, error) {
	st.bmu.Lock()
	for st.body.Len() == 0 && !st.bodyEnded && st.bodyErr == nil {
		st.bcond.Wait()
	}
	if st.body.Len() == 0 {
		err := st.bodyErr
		st.bmu.Unlock()
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n, _ := st.body.Read(p)
	var give int64
	if st.unconsumed > 0 && int64(st.body.Len()) <= st.sc.cfg.streamBufferLimit()/2 {
		give, st.unconsumed = st.unconsumed, 0
	}
	st.bmu.Unlock()
	st.sc.consume(st, give)
	return n, nil
}

// abort ends the stream's work: the handler's context is cancelled and waits wake up.
func (st *stream) abort(err error) {
	st.cancel(err)
	st.bmu.Lock()
	if st.bodyErr == nil {
		st.bodyErr = err
	}
	st.bcond.Broadcast()
	st.bmu.Unlock()
	st.sc.mu.Lock()
	st.sc.cond.Broadcast()
	st.sc.mu.Unlock()
}

// hop-by-hop headers never cross an HTTP/2 hop.
var hopByHop = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true, "te": true, "trailer": true}

// writeHeader sends the response headers. This is where Envoy's connection manager asks its
// listener's drain decision whether to close the connection (encodeHeaders): on a draining
// listener the response goes out behind a GOAWAY shutdown notice.
func (st *stream) writeHeader(status int, h http.Header, end bool) error {
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	sc := st.sc
	if sc.listenerDraining.Load() {
		sc.drainForListener()
	}
	st.wroteHeader, st.status = true, status
	st.touch()
	if end {
		sc.mu.Lock() // mu before wmu: the stream is closed as its last frame is encoded
		defer sc.mu.Unlock()
	}
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.hbuf.Reset()
	_ = sc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), end)
	if end {
		sc.endLocalLocked(st)
	}
	sc.flush()
	return err
}

func encodeHeader(enc *hpack.Encoder, h http.Header) {
	for k, vs := range h {
		lk := strings.ToLower(k)
		if hopByHop[lk] {
			continue
		}
		for _, v := range vs {
			_ = enc.WriteField(hpack.HeaderField{Name: lk, Value: v})
		}
	}
}

// writeBlock writes a header block as HEADERS plus CONTINUATION frames (wmu held).
func (st *stream) writeBlock(block []byte, end bool) error {
	max := int(st.sc.peerMaxFrame.Load())
	first := true
	for first || len(block) > 0 {
		chunk := block
		if len(chunk) > max {
			chunk = chunk[:max]
		}
		block = block[len(chunk):]
		var err error
		if first {
			err = st.sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: chunk,
				EndStream: end, EndHeaders: len(block) == 0})
			first = false
		} else {
			err = st.sc.fr.WriteContinuation(st.id, len(block) == 0, chunk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeData queues body bytes on the stream's send buffer, which drains as the client's
// windows allow. Like Envoy's router it stops reading the upstream (the caller waits here)
// while the connection's write buffer is over its high watermark, or the stream's send buffer
// is over the per-stream limit, until they are below half. With end, it returns once the last
// byte and END_STREAM are sent. It reports whether it had to pause.
func (st *stream) writeData(p []byte, end bool) (paused bool, err error) {
	sc := st.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.queued.Load() > sc.cfg.highWatermark() {
		paused = true
		for sc.queued.Load() > sc.cfg.lowWatermark() && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
	}
	if sc.closing || st.ctx.Err() != nil || st.reset_ {
		return paused, st.gone()
	}
	st.pending.Write(p)
	st.endPending = st.endPending || end
	sc.flushStreamLocked(st)
	limit := sc.cfg.streamBufferLimit()
	if int64(st.pending.Len()) > limit {
		paused = true
		for int64(st.pending.Len()) > limit/2 && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
	}
	for end && !st.ended && !sc.closing && st.ctx.Err() == nil {
		sc.cond.Wait()
	}
	if sc.closing || st.ctx.Err() != nil {
		return paused, st.gone()
	}
	return paused, nil
}

// gone is why a stream can send no more.
func (st *stream) gone() error {
	if err := context.Cause(st.ctx); err != nil {
		return err
	}
	return errors.New("connection closed")
}

// writeTrailers ends the stream with trailers, after the buffered body has gone out.
func (st *stream) writeTrailers(h http.Header) error {
	sc := st.sc
	sc.mu.Lock()
	for st.pending.Len() > 0 && !sc.closing && st.ctx.Err() == nil {
		sc.cond.Wait()
	}
	if sc.closing || st.ctx.Err() != nil {
		sc.mu.Unlock()
		return st.gone()
	}
	sc.wmu.Lock()
	sc.hbuf.Reset()
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), true)
	sc.endLocalLocked(st)
	sc.flush()
	sc.wmu.Unlock()
	sc.mu.Unlock()
	return err
}

// respond sends a complete small response.
func (st *stream) respond(status int, body string) error {
	h := http.Header{"Content-Type": {"text/plain"}, "Content-Length": {strconv.Itoa(len(body))}}
	if body == "" {
		return st.writeHeader(status, h, true)
	}
	if err := st.writeHeader(status, h, false); err != nil {
		return err
	}
	_, err := st.writeData([]byte(body), true)
	return err
}

// reset sends RST_STREAM and drops whatever the stream still had to send.
func (st *stream) reset(code http2.ErrCode) {
	sc := st.sc
	sc.h.txReset.Inc()
	sc.mu.Lock()
	st.reset_, st.endPending = true, false
	st.pending.Reset()
	sc.wmu.Lock()
	_ = sc.fr.WriteRSTStream(st.id, code)
	sc.endLocalLocked(st)
	sc.flush()
	sc.wmu.Unlock()
	sc.cond.Broadcast()
	sc.mu.Unlock()
}

// finish releases the stream. A handler that returns without ending its stream resets it.
// Request bytes still held back are given back to the connection, as nghttp2 does for a
// closed stream.
func (st *stream) finish() {
	st.sc.mu.Lock()
	ended := st.ended
	st.sc.mu.Unlock()
	if !ended && st.sc.ctx.Err() == nil {
		st.reset(http2.ErrCodeInternal)
	}
	st.bmu.Lock()
	idle := st.idle
	st.bmu.Unlock()
	if idle != nil {
		idle.Stop()
	}
	st.cancel(nil)
	st.bmu.Lock()
	held := st.unconsumed
	st.unconsumed = 0
	st.bmu.Unlock()
	st.sc.consume(nil, held)
	st.sc.streamDone(st)
}
