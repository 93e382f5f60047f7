package emulator

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
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
	// starts the connection's drain when it takes the request up (hcm.begin).
	atLimit bool
	work    Booking        // the worker's work on the request's HEADERS and filters
	flush   *dispatchFlush // the frames of the dispatch that made the stream, which go first
	ctx     context.Context
	cancel  context.CancelCauseFunc
	// envoy: Envoy's stream exists (made as the header block starts); state says how far the
	// connection manager got with it (streamQueued, streamHandled, streamDone).
	envoy       bool
	state       atomic.Int32
	remaining   int64  // request body bytes its content-length still expects; -1: none
	resetReason string // "remote" (the client's RST_STREAM) or "local" (the codec's)

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
	recvDone   bool  // the client ended its side (half-closed remote): no more stream WINDOW_UPDATEs
	sendWindow int64
	pending    bytes.Buffer // response bytes waiting for the client's windows
	endPending bool         // END_STREAM goes out with the last pending byte
	blocked    bool         // on sc.blocked
	reset_     bool         // reset (either side): nothing more goes out
	h2closed   bool         // closed in HTTP/2's sense: no longer counted against the cap

	wroteHeader bool
	ended       bool
	handled     bool // the handler has returned
	// resetCounted: the connection manager counted its reset (downstream_rq_rx_reset) once.
	resetCounted bool
	released     bool // streamDone is under way
	headerBytes  int64
	dispatched   bool // the request's headers reached the connection manager
	status       int
	idle         *time.Timer
	maxDuration  *time.Timer // max_stream_duration (h2longstream.go), under bmu
	// sawData: a request DATA frame has reached the connection manager; each later one costs
	// the worker a frame's work (h2longstream.go requestData).
	sawData bool
}

// A stream's progress through the connection manager.
const (
	streamQueued  int32 = iota // waiting for the worker
	streamHandled              // its handler runs
	streamDone                 // finished, or given up with its connection
)

var (
	errStreamReset = errors.New("stream reset by the gateway")
	errClientReset = errors.New("client reset the stream")
)

func newStream(sc *serverConn, id uint32, fin bool) *stream {
	st := &stream{
		sc: sc, id: id, started: time.Now(), sendWindow: sc.peerInitWindow,
		header:     http.Header{},
		bodyEnded:  fin,
		hasBody:    !fin,
		remaining:  -1,
		recvWindow: int64(sc.cfg.StreamWindow),
	}
	st.bcond = sync.NewCond(&st.bmu)
	st.ctx, st.cancel = context.WithCancelCause(sc.ctx)
	return st
}

// addHeader keeps a validated request field (trailers are validated and dropped: the
// upstream hop does not forward them).
func (st *stream) addHeader(f hpack.HeaderField, trailer bool) {
	if trailer {
		return
	}
	switch f.Name {
	case ":method":
		st.method = f.Value
	case ":path":
		st.path = f.Value
	case ":authority":
		st.authority = f.Value
	case ":scheme":
	default:
		if f.Name == "host" && st.authority == "" {
			st.authority = f.Value
		}
		st.header.Add(f.Name, f.Value)
	}
	n := int64(len(f.Name) + len(f.Value) + headerOverhead)
	st.headerBytes += n
	st.sc.mem.add(n)
}

// startIdleTimer arms stream_idle_timeout once Envoy has the request.
func (st *stream) startIdleTimer() {
	if d := st.sc.cfg.StreamIdleTimeout; d > 0 {
		st.bmu.Lock() // the timer's function may run before this assignment is visible
		st.idle = time.AfterFunc(d, st.onIdleTimeout)
		st.bmu.Unlock()
	}
}

func (st *stream) touch() {
	st.bmu.Lock()
	idle := st.idle
	st.bmu.Unlock()
	if idle != nil {
		idle.Reset(st.sc.cfg.StreamIdleTimeout)
	}
}

// onIdleTimeout is Envoy's stream_idle_timeout: 408 if nothing was sent yet, else a local
// reset, which the codec sends as RST_STREAM NO_ERROR (codec_impl.cc reasonToReset: every
// local reason but a refused stream and a CONNECT error).
func (st *stream) onIdleTimeout() {
	sc := st.sc
	sc.h.RqIdleTimeout.Inc()
	if !st.wroteHeader {
		_ = st.respond(http.StatusRequestTimeout, "stream timeout")
	} else {
		st.reset(http2.ErrCodeNo)
	}
	st.abort(errors.New("stream idle timeout"))
}

// recv appends request body bytes, already counted against the stream's window; end marks the
// end of the body. The bytes go back to the client at once unless the stream's buffer is over
// its limit (Envoy stops giving window to a stream whose buffer is overrun), and then as the
// upstream reads them.
func (st *stream) recv(p []byte, end bool) {
	sc := st.sc
	sc.mu.Lock()
	st.recvWindow -= int64(len(p))
	sc.mu.Unlock()
	st.bmu.Lock()
	st.body.Write(p)
	sc.mem.add(int64(len(p)))
	overrun := int64(st.body.Len()) > sc.cfg.StreamBufferLimit()
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
		sc.consume(st, int64(len(p)), true)
	}
	st.touch()
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
	st.sc.mem.add(-int64(n))
	var give int64
	if st.unconsumed > 0 && int64(st.body.Len()) <= st.sc.cfg.StreamBufferLimit()/2 {
		give, st.unconsumed = st.unconsumed, 0
	}
	st.bmu.Unlock()
	st.sc.consume(st, give, false)
	return n, nil
}

// bodyEndedEmpty says the request body has ended with nothing left to read: what the
// Transport's probe of a body of unknown length finds (transfer.go probeRequestBody).
func (st *stream) bodyEndedEmpty() bool {
	st.bmu.Lock()
	defer st.bmu.Unlock()
	return st.bodyEnded && st.body.Len() == 0 && st.bodyErr == nil
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

// reset sends RST_STREAM from outside a dispatch (a handler giving up, a timer) and drops
// whatever the stream still had to send.
func (st *stream) reset(code http2.ErrCode) { st.resetBy(code, true) }

// onFlushTimeout is the codec's flush timer: a response still not out is reset, by the codec
// alone (codec_impl.cc StreamImpl::onPendingFlushTimer: http2.tx_flush_timeout, LocalReset,
// no reset callbacks to the connection manager).
func (st *stream) onFlushTimeout() {
	sc := st.sc
	sc.mu.Lock()
	stuck := st.stuckInCodec()
	sc.mu.Unlock()
	if !stuck {
		return
	}
	sc.h.TxFlushTimeout.Inc()
	st.resetBy(http2.ErrCodeNo, false)
}

// resetBy resets the stream; byHCM says the connection manager gave it up (and counts
// downstream_rq_tx_reset), where the codec alone does for a stream the connection manager
// has already finished (the flush timeout).
func (st *stream) resetBy(code http2.ErrCode, byHCM bool) {
	sc := st.sc
	if st.flush != nil {
		_ = st.flush.before(sc.ctx)
	}
	select {
	case <-sc.prefaced:
	case <-sc.ctx.Done():
	}
	sc.mu.Lock()
	if st.reset_ {
		sc.mu.Unlock()
		return
	}
	st.reset_, st.endPending = true, false
	st.pendingDrop()
	if byHCM {
		sc.h.RqTxReset.Inc() // ActiveStream::resetStream: the gateway gave the stream up
	}
	sc.wmu.Lock()
	if !sc.refusing() {
		sc.h.TxReset.Inc()
		_ = sc.fr.WriteRSTStream(st.id, code)
		sc.counted(true, false)
		sc.flush()
	}
	sc.endLocalLocked(st)
	sc.wmu.Unlock()
	sc.cond.Broadcast()
	sc.mu.Unlock()
	sc.afterWrite()
}

// handlerDone is the end of a stream's handler. A handler that returns without ending its
// stream resets it; one whose response still waits for the client's windows leaves the stream
// to end when the last byte goes out.
func (st *stream) handlerDone() {
	sc := st.sc
	sc.mu.Lock()
	// A connection whose session failed is going down as a whole: its streams are reset with it.
	ending := st.ended || st.endPending || st.reset_ || sc.closing || sc.goingAway.Load()
	unended := sc.closing && !st.ended
	sc.mu.Unlock()
	if !ending && sc.ctx.Err() == nil {
		st.reset(http2.ErrCodeInternal)
	}
	if unended {
		// The connection closed before the response ended (its headers may have failed to go
		// out): Envoy's resetAllStreams resets the stream with the rest, and counts it once,
		// whether its pass here comes first or this one does.
		sc.streamReset(st, errConnClosed)
	}
	st.bmu.Lock()
	idle := st.idle
	held := st.unconsumed
	st.unconsumed = 0
	st.bmu.Unlock()
	if idle != nil {
		idle.Stop()
	}
	st.stopDurationTimer()
	// Request bytes still held back are given back to the connection, as nghttp2 does for a
	// closed stream.
	sc.consume(nil, held, false)
	sc.mu.Lock()
	st.handled = true
	done := (st.ended || st.reset_ || sc.closing) && !st.released
	st.released = st.released || done
	stuck := st.stuckInCodec()
	sc.mu.Unlock()
	if d := sc.cfg.StreamIdleTimeout; stuck && d > 0 {
		// The connection manager is done with the stream, and the codec holds the rest of
		// the response for the client's window: its flush timer (stream_flush_timeout, by
		// default stream_idle_timeout) starts (StreamImpl::encodeDataHelper, local_end_stream_).
		time.AfterFunc(d, st.onFlushTimeout)
	}
	if done {
		sc.streamDone(st)
	}
}

// stuckInCodec says the whole response is with the codec and part of it still waits for the
// client's window (under sc.mu).
func (st *stream) stuckInCodec() bool {
	return st.endPending && st.pending.Len() > 0 && !st.reset_ && !st.sc.closing
}
