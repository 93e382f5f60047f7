package emulator

// A stream's response on the wire: its headers, body and trailers as the codec encodes them,
// the body pending behind the peer's windows, and the local replies Envoy sends itself.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// writeHeader sends the response headers. This is where Envoy's connection manager asks its
// listener's drain decision whether to close the connection (encodeHeaders): on a draining
// listener the response goes out behind a GOAWAY shutdown notice.
func (st *stream) writeHeader(status int, h http.Header, end bool) error {
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	sc := st.sc
	if st.flush != nil { // the frames of the stream's dispatch, the server's SETTINGS among them, go first
		if err := st.flush.before(st.ctx); err != nil {
			return err
		}
	}
	select {
	case <-sc.prefaced:
	case <-st.ctx.Done():
		return context.Cause(st.ctx)
	}
	if sc.listenerDraining.Load() {
		sc.drainForListener()
	}
	st.touch()
	sc.mu.Lock() // mu before wmu: the stream is closed as its last frame is encoded
	defer sc.mu.Unlock()
	sc.wmu.Lock()
	if sc.refusing() || st.reset_ {
		sc.wmu.Unlock()
		return st.gone()
	}
	if st.wroteHeader { // a local reply (a timeout) went out first: the stream is its
		sc.wmu.Unlock()
		return errHeadersSent
	}
	st.wroteHeader, st.status = true, status
	st.holdResponseHeaders(h)
	sc.h.Charge(status)
	sc.hbuf.Reset()
	_ = sc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), end)
	if end {
		sc.endLocalLocked(st)
	}
	sc.flush()
	sc.wmu.Unlock()
	sc.afterWrite()
	return err
}

// errHeadersSent is a second response's headers on a stream that already has one.
var errHeadersSent = errors.New("response headers already sent")

// refusing reports that the session takes no more frames: its connection is closing, or an
// error GOAWAY is queued (wmu held).
func (sc *serverConn) refusing() bool { return sc.wclosed || sc.goingAway.Load() }

// holdResponseHeaders counts the response headers against the pod's memory: the connection
// manager keeps them until the stream ends (FilterManager::encodeHeaders hands them to
// ActiveStream::setResponseHeaders, for the access log and the stats filters) (sc.mu held).
func (st *stream) holdResponseHeaders(h http.Header) {
	n := int64(len(":status") + 3 + headerOverhead)
	for k, vs := range h {
		if hopByHop[strings.ToLower(k)] {
			continue
		}
		for _, v := range vs {
			n += int64(len(k) + len(v) + headerOverhead)
		}
	}
	st.headerBytes += n
	st.sc.mem.add(n)
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
		st.sc.counted(false, false)
		if err != nil {
			return err
		}
	}
	return nil
}

// writeData queues body bytes on the stream's send buffer, which drains as the client's
// windows allow. Like Envoy's router it stops reading the upstream (the caller waits here)
// while the connection's write buffer is over its high watermark, or the stream's send buffer
// is over the per-stream limit, until they are below half. With end, the stream ends once the
// buffer has gone out; the caller does not wait for that. It reports whether it had to pause.
func (st *stream) writeData(p []byte, end bool) (paused bool, err error) {
	sc := st.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.queued.Load() > sc.cfg.HighWatermark() {
		paused = true
		for sc.queued.Load() > sc.cfg.LowWatermark() && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
	}
	if sc.closing || st.ctx.Err() != nil || st.reset_ {
		return paused, st.gone()
	}
	st.pendingWrite(p)
	st.endPending = st.endPending || end
	sc.flushStreamLocked(st)
	limit := sc.cfg.StreamBufferLimit()
	if int64(st.pending.Len()) > limit {
		paused = true
		for int64(st.pending.Len()) > limit/2 && !sc.closing && st.ctx.Err() == nil {
			sc.cond.Wait()
		}
	}
	if sc.closing || st.ctx.Err() != nil {
		return paused, st.gone()
	}
	return paused, nil
}

// pendingWrite and pendingNext keep the stream's send buffer and its share of the pod's
// memory (in Envoy's buffer slices) in step (sc.mu held).
func (st *stream) pendingWrite(p []byte) {
	before := st.pending.Len()
	st.pending.Write(p)
	st.sc.mem.add(sliced(st.pending.Len()) - sliced(before))
}

func (st *stream) pendingNext(n int) []byte {
	before := st.pending.Len()
	b := st.pending.Next(n)
	st.sc.mem.add(sliced(st.pending.Len()) - sliced(before))
	return b
}

func (st *stream) pendingDrop() {
	st.sc.mem.add(-sliced(st.pending.Len()))
	st.pending.Reset()
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
	if sc.closing || st.ctx.Err() != nil || st.reset_ {
		sc.mu.Unlock()
		return st.gone()
	}
	sc.wmu.Lock()
	if sc.refusing() {
		sc.wmu.Unlock()
		sc.mu.Unlock()
		return st.gone()
	}
	sc.hbuf.Reset()
	encodeHeader(sc.henc, h)
	err := st.writeBlock(sc.hbuf.Bytes(), true)
	sc.endLocalLocked(st)
	sc.flush()
	sc.wmu.Unlock()
	sc.mu.Unlock()
	sc.afterWrite()
	return err
}

// respond sends a complete small response.
func (st *stream) respond(status int, body string) error {
	h := http.Header{"Content-Type": {"text/plain"}, "Content-Length": {strconv.Itoa(len(body))}}
	// A HEAD request's local reply keeps the body's length and drops the body
	// (source/common/http/utility.cc, Utility::sendLocalReply: is_head_request ends the
	// stream with the headers; Envoy idle_timeout_integration_test.cc,
	// PerStreamIdleTimeoutHeadRequestAfterDownstreamHeadRequest).
	if body == "" || st.method == http.MethodHead {
		return st.writeHeader(status, h, true)
	}
	if err := st.writeHeader(status, h, false); err != nil {
		return err
	}
	_, err := st.writeData([]byte(body), true)
	return err
}
