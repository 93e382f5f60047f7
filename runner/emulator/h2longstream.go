package emulator

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
)

// A long-lived stream on the gateway: what ends it (max_stream_duration), and what its later
// messages cost the worker.
//
// max_stream_duration is HttpProtocolOptions.max_stream_duration on the connection manager
// (common_http_protocol_options). Envoy arms its timer in the ActiveStream constructor, as the
// stream's header block starts (conn_manager_impl.cc), and refreshDurationTimeout keeps
// counting from there once a route is picked: a route's own max_stream_duration would replace
// it, and Istio leaves that unset on the routes a VirtualService makes (route.go setTimeout),
// so the connection manager's value is the one in force on a gateway. On expiry
// onStreamMaxDurationReached counts downstream_rq_max_duration_reached and sends a local
// reply: 504, or 408 while the request has not all arrived (Utility::maybeRequestTimeoutCode);
// to a gRPC request, :status 200 with grpc-status 4 (DEADLINE_EXCEEDED) and grpc-message
// "downstream duration timeout", headers only (Utility::sendLocalReply). Once response headers
// have gone out the filter manager can only reset the stream (DownstreamFilterManager::
// sendLocalReply, LocalReset), which the HTTP/2 codec sends as RST_STREAM NO_ERROR
// (codec_impl.cc reasonToReset): a gRPC client reads that as status INTERNAL. The connection
// stays open: only a drain (GOAWAY) moves the client's next streams to another connection.

// errMaxDuration ends a stream's work when max_stream_duration fires.
var errMaxDuration = errors.New("max_stream_duration reached")

// startDurationTimer arms max_stream_duration as Envoy's stream begins.
func (st *stream) startDurationTimer() {
	d := st.sc.cfg.maxStreamDuration
	if d <= 0 {
		return
	}
	st.bmu.Lock() // the timer may fire before the assignment is visible otherwise
	st.maxDuration = time.AfterFunc(d, st.onMaxDuration)
	st.bmu.Unlock()
}

// stopDurationTimer disarms it as the stream is destroyed (doDeferredStreamDestroy).
func (st *stream) stopDurationTimer() {
	st.bmu.Lock()
	t := st.maxDuration
	st.bmu.Unlock()
	if t != nil {
		t.Stop()
	}
}

// onMaxDuration is ActiveStream::onStreamMaxDurationReached.
func (st *stream) onMaxDuration() {
	sc := st.sc
	sc.mu.Lock()
	over := st.ended || st.reset_ || sc.closing
	started := st.wroteHeader
	sc.mu.Unlock()
	if over {
		return
	}
	sc.h.rqMaxDuration.Inc()
	// A response the handler starts meanwhile wins the race for the headers; the reply then
	// fails and the stream is reset as if it had started first.
	if started || st.localReply(st.durationTimeoutCode(), "downstream duration timeout", grpcDeadlineExceeded) != nil {
		st.reset(http2.ErrCodeNo)
	}
	st.abort(errMaxDuration)
}

// durationTimeoutCode is Utility::maybeRequestTimeoutCode: 504 once the request is all in.
func (st *stream) durationTimeoutCode() int {
	st.bmu.Lock()
	defer st.bmu.Unlock()
	if st.bodyEnded {
		return http.StatusGatewayTimeout
	}
	return http.StatusRequestTimeout
}

// grpcDeadlineExceeded is grpc-status 4.
const grpcDeadlineExceeded = 4

// localReply is Envoy's local reply from outside the stream's handler: to a gRPC request, a trailers-only response with grpc-status and
// grpc-message; to anything else, the status with details as a text body.
func (st *stream) localReply(status int, details string, grpcStatus int) error {
	if !strings.HasPrefix(st.header.Get("Content-Type"), "application/grpc") {
		return st.respond(status, details)
	}
	h := http.Header{"Content-Type": {"application/grpc"}, "Grpc-Status": {strconv.Itoa(grpcStatus)}, "Grpc-Message": {details}}
	return st.writeHeader(http.StatusOK, h, true)
}

// messageGap is the pause after which data arriving on a stream is a message of its own rather
// than the rest of one already on its way: Envoy reads up to 128 KiB from an upstream socket at
// a time (raw_buffer_socket.cc), so a body that arrives back to back is forwarded in one read,
// and a streamed message that arrives later is another read, another encodeData through the
// filter chain.
const messageGap = time.Millisecond

// requestData is the worker's cost of one request DATA frame: Envoy's codec hands each frame
// to the connection manager (ConnectionImpl::onDataChunk -> decodeData), and every frame after
// the request's first is work a request's service time does not cover.
func (sc *serverConn) requestData(st *stream) {
	d := sc.h.pod.model.PerFrame
	if st.sawData && d > 0 {
		sc.book(d)
	}
	st.sawData = true
}

// responseRead is the worker's cost of one upstream read that reached the stream after the
// stream had waited for it: a streamed message (a gRPC server's next message, an event). The
// response's first read is the request's service time; reads of a body that is already on its
// way cost only their bytes (Model.PerKiB).
func (m Model) responseRead(reads int, waited time.Duration) time.Duration {
	if reads == 0 || waited < messageGap {
		return 0
	}
	return m.PerFrame
}
