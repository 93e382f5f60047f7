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
// response side with HTTP/2 flow control and the connection's write-buffer watermarks.
type stream struct {
	sc        *serverConn
	id        uint32
	method    string
	path      string
	authority string
	header    http.Header
	started   time.Time
	ctx       context.Context
	cancel    context.CancelCauseFunc

	// Request body, filled by the read loop.
	bmu        sync.Mutex
	bcond      *sync.Cond
	body       bytes.Buffer
	bodyEnded  bool
	hasBody    bool // the request's HEADERS did not end the stream: a body follows
	bodyErr    error
	recvUnsent int64 // bytes consumed and not yet returned to the client as window
	recvWindow int64 // bytes the client may still send on this stream

	// Response side. sendWindow is under sc.mu.
	sendWindow  int64
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
		recvWindow: int64(sc.cfg.streamWindow),
	}
	st.bcond = sync.NewCond(&st.bmu)
	for _, hf := range f.RegularFields() {
		st.header.Add(hf.Name, hf.Value)
	}
	st.ctx, st.cancel = context.WithCancelCause(sc.ctx)
	if d := sc.cfg.streamIdleTimeout; d > 0 {
		st.idle = time.AfterFunc(d, st.onIdleTimeout)
	}
	return st
}

func (st *stream) touch() {
	if st.idle != nil {
		st.idle.Reset(st.sc.cfg.streamIdleTimeout)
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
// client sent more than the stream's window allowed (a FLOW_CONTROL_ERROR).
func (st *stream) recv(p []byte, end bool) bool {
	st.bmu.Lock()
	st.recvWindow -= int64(len(p))
	if st.recvWindow < 0 {
		st.bmu.Unlock()
		return false
	}
	st.body.Write(p)
	if end {
		st.bodyEnded = true
	}
	st.bcond.Broadcast()
	st.bmu.Unlock()
	st.touch()
	return true
}

// Read reads the request body, returning window to the client as it is consumed.
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
	st.recvUnsent += int64(n)
	var ack int64
	if st.recvUnsent >= int64(st.sc.cfg.streamWindow)/2 || st.bodyEnded {
		ack, st.recvUnsent = st.recvUnsent, 0
		st.recvWindow += ack
	}
	st.bmu.Unlock()
	if ack > 0 && !st.bodyEndedNow() {
		st.sc.sendWindowUpdate(st.id, ack)
	}
	return n, nil
}

func (st *stream) bodyEndedNow() bool {
	st.bmu.Lock()
	defer st.bmu.Unlock()
	return st.bodyEnded
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

// writeHeader sends the response headers.
func (st *stream) writeHeader(status int, h http.Header, end bool) error {
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	st.wroteHeader, st.status = true, status
	st.touch()
	sc := st.sc
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.hbuf.Reset()
	_ = sc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), end)
	sc.flush()
	if end {
		st.ended = true
	}
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

// writeData sends body bytes within the client's windows. If the connection's write buffer is
// above its high watermark it first waits for it to drain below the low watermark, which is
// what pausing the upstream read means: the handler reads the upstream only between writes.
// It reports whether it had to pause.
func (st *stream) writeData(p []byte, end bool) (paused bool, err error) {
	sc := st.sc
	if sc.queued.Load() > sc.cfg.highWatermark() {
		paused = true
		sc.mu.Lock()
		for sc.queued.Load() > sc.cfg.lowWatermark() && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
		sc.mu.Unlock()
	}
	for {
		sc.mu.Lock()
		for len(p) > 0 && (sc.connSendWindow <= 0 || st.sendWindow <= 0) && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
		if sc.closing || st.ctx.Err() != nil {
			sc.mu.Unlock()
			return paused, context.Cause(st.ctx)
		}
		n := int64(len(p))
		n = min(n, sc.connSendWindow, st.sendWindow, int64(sc.peerMaxFrame.Load()))
		sc.connSendWindow -= n
		st.sendWindow -= n
		sc.mu.Unlock()
		chunk := p[:n]
		p = p[n:]
		last := end && len(p) == 0
		sc.wmu.Lock()
		err := sc.fr.WriteData(st.id, last, chunk)
		sc.flush()
		sc.wmu.Unlock()
		st.touch()
		if err != nil {
			return paused, err
		}
		if last {
			st.ended = true
		}
		if len(p) == 0 {
			return paused, nil
		}
	}
}

// writeTrailers ends the stream with trailers.
func (st *stream) writeTrailers(h http.Header) error {
	sc := st.sc
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.hbuf.Reset()
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), true)
	sc.flush()
	st.ended = true
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

// reset sends RST_STREAM.
func (st *stream) reset(code http2.ErrCode) {
	st.sc.h.txReset.Inc()
	st.sc.wmu.Lock()
	_ = st.sc.fr.WriteRSTStream(st.id, code)
	st.sc.flush()
	st.sc.wmu.Unlock()
	st.ended = true
}

// finish releases the stream. A handler that returns without ending its stream resets it.
func (st *stream) finish() {
	if !st.ended && st.sc.ctx.Err() == nil {
		st.reset(http2.ErrCodeInternal)
	}
	if st.idle != nil {
		st.idle.Stop()
	}
	st.cancel(nil)
	st.sc.streamDone(st)
}
