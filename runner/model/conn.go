package model

import "time"

// A downstream connection's rules, as Envoy's HTTP/2 codec and connection manager apply them:
// the stream cap, rotation on request count and duration, and the drain sequence. The socket
// emulator applies them to real connections, the simulator to modelled ones.

// Admission is what a connection does with a new stream.
type Admission int

const (
	// Admit: the stream is served.
	Admit Admission = iota
	// Refuse: RST_STREAM REFUSED_STREAM (http2.stream_refused_errors); the connection goes on.
	Refuse
	// ConnError: the connection closes with nothing sent.
	ConnError
)

// AdmitStream decides a new stream on a connection with open streams, under a cap the client
// has acknowledged (acked: what the server's SETTINGS said once the client's SETTINGS ACK came;
// unlimited before) and the cap the server advertises. Over an acknowledged cap, oghttp2 (for
// parity with nghttp2) and nghttp2 call Envoy's onInvalidFrame, which fails the connection
// (oghttp2_session.cc OnHeaderFrameStart, nghttp2_session.c session_on_request_headers_received);
// over a cap not yet acknowledged the stream alone is refused (onInvalidFrame(kRefusedStream)).
// A cap never makes Envoy send GOAWAY: a client that wants more streams must open another
// connection, and one that queues gets no more concurrency.
func AdmitStream(open, acked, advertised uint32) Admission {
	switch {
	case open >= acked:
		return ConnError
	case open >= advertised:
		return Refuse
	}
	return Admit
}

// AtRequestLimit reports whether the connection's n-th request (1-based) is at or over
// max_requests_per_connection (0: none): Envoy's ConnectionManagerImpl::newStream counts every
// such request in downstream_cx_max_requests_reached and starts the drain on the first. It does
// so as the worker dispatches the request, so a saturated worker drains later and the
// connection takes more requests meanwhile (TestMaxRequestsDrainWaitsForTheWorker).
func AtRequestLimit(n uint64, max uint32) bool { return max > 0 && n >= uint64(max) }

// DrainState is where a connection is in Envoy's drain sequence.
type DrainState int

const (
	// NotDraining: serving.
	NotDraining DrainState = iota
	// NoticeSent: GOAWAY(2^31-1, NO_ERROR) sent; new streams still accepted until drain_timeout.
	NoticeSent
	// FinalSent: GOAWAY(last stream id) sent; the connection closes when its last stream ends.
	FinalSent
)

// Drain is a connection's drain sequence (ConnectionManagerImpl::startDrainSequence,
// onDrainTimeout): a shutdown notice first, the final GOAWAY drain_timeout later, then the close
// as soon as no stream is open. Clients move new requests to a new connection at the notice;
// streams already open finish, so a long-lived stream keeps a drained connection open.
type Drain struct {
	State DrainState
	// Reason is what started it: max_requests_per_connection, max_connection_duration,
	// idle_timeout, listener_drain.
	Reason string
}

// Start begins the drain for reason; false when it had begun already (the caller counts only a
// drain it started). The caller sends the notice now and calls Final after FinalAfter.
func (d *Drain) Start(reason string) bool {
	if d.State != NotDraining {
		return false
	}
	d.State, d.Reason = NoticeSent, reason
	return true
}

// FinalAfter is how long after the notice the final GOAWAY goes: drain_timeout.
func FinalAfter(l *Listener) time.Duration { return l.DrainTimeout }

// Final moves to the final GOAWAY; false unless the notice had been sent. The caller sends it,
// and closes the connection at once when no stream is open, else when the last one ends.
func (d *Drain) Final() bool {
	if d.State != NoticeSent {
		return false
	}
	d.State = FinalSent
	return true
}

// ClosesWhenIdle reports whether the connection closes as its last stream ends.
func (d *Drain) ClosesWhenIdle() bool { return d.State == FinalSent }

// DelayedCloseTimeout is how long Envoy waits, after its own close with data written, for the
// peer to close first (HttpConnectionManager delayed_close_timeout, 1 s by default); past it
// the connection is closed and downstream_cx_delayed_close_timeout counts it.
const DelayedCloseTimeout = time.Second

// StreamDeadline is when a stream started at start reaches max_stream_duration (ok false: no
// limit). At the deadline a stream whose response headers are out is reset (RST_STREAM
// NO_ERROR); before them the connection manager answers locally (DurationReply), and the
// connection stays open (ActiveStream::onStreamMaxDurationReached).
func StreamDeadline(start time.Time, l *Listener) (time.Time, bool) {
	if l.MaxStreamDuration <= 0 {
		return time.Time{}, false
	}
	return start.Add(l.MaxStreamDuration), true
}

// DurationReply is the local reply to a stream past max_stream_duration before its response
// began: 408 while the request is still arriving, else 504; for gRPC a headers-only 200 with
// grpc-status 4 (DEADLINE_EXCEEDED) (conn_manager_impl.cc onStreamMaxDurationReached,
// Utility::sendLocalReply).
func DurationReply(requestEnded, grpc bool) (status int, grpcStatus string) {
	switch {
	case grpc:
		return 200, "4"
	case !requestEnded:
		return 408, ""
	}
	return 504, ""
}
