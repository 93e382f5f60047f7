package emulator

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
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
	now := time.Now()
	deadline, ok := model.StreamDeadline(now, st.sc.cfg)
	if !ok {
		return
	}
	st.bmu.Lock() // the timer may fire before the assignment is visible otherwise
	st.maxDuration = time.AfterFunc(deadline.Sub(now), st.onMaxDuration)
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
	sc.h.RqMaxDuration.Inc()
	// A response the handler starts meanwhile wins the race for the headers; the reply then
	// fails and the stream is reset as if it had started first.
	if started || st.durationReply() != nil {
		st.reset(http2.ErrCodeNo)
	}
	st.abort(errMaxDuration)
}

// durationReply is Envoy's local reply from outside the stream's handler to a stream past
// max_stream_duration (model.DurationReply): to a gRPC request, a trailers-only response with
// grpc-status and grpc-message; to anything else, the status with details as a text body.
func (st *stream) durationReply() error {
	const details = "downstream duration timeout"
	st.bmu.Lock()
	ended := st.bodyEnded
	st.bmu.Unlock()
	grpc := strings.HasPrefix(st.header.Get("Content-Type"), "application/grpc")
	status, grpcStatus := model.DurationReply(ended, grpc)
	if !grpc {
		return st.respond(status, details)
	}
	h := http.Header{"Content-Type": {"application/grpc"}, "Grpc-Status": {grpcStatus}, "Grpc-Message": {details}}
	return st.writeHeader(status, h, true)
}

// requestData is the worker's cost of one request DATA frame: Envoy's codec hands each frame
// to the connection manager (ConnectionImpl::onDataChunk -> decodeData), and every frame after
// the request's first is work a request's service time does not cover.
func (sc *serverConn) requestData(st *stream) {
	if d := sc.h.pod.model.RequestData(!st.sawData); d > 0 {
		sc.book(d)
	}
	st.sawData = true
}
