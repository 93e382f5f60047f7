package emulator

import "time"

// The connection manager's guard against rapid resets (CVE-2023-44487), on for every HTTP
// version (conn_manager_impl.cc ConnectionManagerImpl::doDeferredStreamDestroy,
// isPrematureRstStream, maybeDrainDueToPrematureResets). Every stream that ends counts; a
// premature one is one that ended within the minimum lifetime (whole seconds not above
// overload.premature_reset_min_stream_lifetime_seconds) without a response. Before
// overload.premature_reset_total_stream_count streams have ended, half that many premature ones
// trip it; after, half of all that ended. The connection is then aborted: no GOAWAY, no flush
// (ConnectionCloseType::Abort), and downstream_rq_too_many_premature_resets counts it. Istio
// sets neither runtime key (pkg/bootstrap/config.go extractRuntimeFlags), so Envoy's defaults
// hold.
const (
	prematureMinLifetimeSeconds = 1
	prematureTotalStreamCount   = 500
)

// streamDestroyed counts a stream that ended, and aborts the connection when too many ended
// prematurely. A connection already closing is left alone (the guard acts on an open one only).
func (h *hcm) streamDestroyed(st *stream, closing bool) {
	sc := st.sc
	premature := int64(time.Since(st.started)/time.Second) <= prematureMinLifetimeSeconds && !st.wroteHeader
	sc.mu.Lock()
	sc.closedStreams++
	if premature {
		sc.prematureStreams++
	}
	closed, bad := sc.closedStreams, sc.prematureStreams
	trip := !sc.prematureTripped && !closing &&
		(closed < prematureTotalStreamCount && bad*2 >= prematureTotalStreamCount ||
			closed >= prematureTotalStreamCount && bad*2 >= closed)
	if trip {
		sc.prematureTripped = true
	}
	sc.mu.Unlock()
	if trip {
		h.PrematureResets.Inc()
		go sc.closeByUs("too_many_premature_resets")
	}
}
