package emulator

import (
	"golang.org/x/net/http2"
)

// HTTP/2 flow control as Envoy runs nghttp2 (automatic window updates off, data consumed by
// hand): the receive windows the knobs set are enforced; a stream's data is returned to the
// client as soon as it arrives unless the stream's buffer is over its limit (Envoy's
// per_stream_buffer_limit, which is initial_stream_window_size), and then as the upstream
// drains it. On the send side each stream's response waits in its own buffer, of the same
// limit, for the client's windows: over the limit the gateway stops reading the upstream.

// A stream counts against the cap until it is closed in HTTP/2's sense: both sides have sent
// END_STREAM, or it was reset. The HTTP/2 library closes it as the frame that ends it is
// written, so a client that opens a new stream as soon as it sees the end never finds the old
// one still counted. These run with mu held (and wmu, when a frame is being encoded).

// endLocalLocked records that the response ended (its END_STREAM frame is being encoded).
func (sc *serverConn) endLocalLocked(st *stream) {
	st.ended = true
	sc.closeIfDoneLocked(st)
}

// endRemoteLocked records that the request ended.
func (sc *serverConn) endRemoteLocked(st *stream) {
	st.recvDone = true
	sc.closeIfDoneLocked(st)
}

func (sc *serverConn) closeIfDoneLocked(st *stream) {
	if !st.h2closed && (st.reset_ || st.ended && st.recvDone) {
		st.h2closed = true
		sc.open--
	}
	// A stream whose handler has returned is released once its last frame is out.
	if st.handled && (st.ended || st.reset_) && !st.released {
		st.released = true
		go sc.streamDone(st)
	}
}

// consume returns n bytes to the client: to the stream's window (when st is not nil and still
// receiving) and to the connection's, each in a WINDOW_UPDATE when the HTTP/2 library would
// send one (windowUpdateDue). While dispatching (inDispatch), the update goes out with the
// dispatch's other frames.
func (sc *serverConn) consume(st *stream, n int64, inDispatch bool) {
	if n <= 0 {
		return
	}
	var streamInc, connInc int64
	sc.mu.Lock()
	if st != nil && !st.recvDone && !st.h2closed {
		st.consumed += n
		if sc.windowUpdateDue(int64(sc.cfg.StreamWindow), st.recvWindow, st.consumed) {
			streamInc, st.consumed = st.consumed, 0
			st.recvWindow += streamInc
		}
	}
	sc.connConsumed += n
	if sc.windowUpdateDue(int64(sc.cfg.ConnWindow), sc.connRecvWindow, sc.connConsumed) {
		connInc, sc.connConsumed = sc.connConsumed, 0
		sc.connRecvWindow += connInc
	}
	sc.mu.Unlock()
	for _, u := range []struct {
		id  uint32
		inc int64
	}{{streamID(st), streamInc}, {0, connInc}} {
		switch {
		case u.inc <= 0:
		case inDispatch:
			sc.enqueue(outFrame{typ: http2.FrameWindowUpdate, stream: u.id, inc: uint32(u.inc)})
		default:
			sc.sendWindowUpdate(u.id, u.inc)
		}
	}
}

func streamID(st *stream) uint32 {
	if st == nil {
		return 0
	}
	return st.id
}

// windowUpdateDue says when the HTTP/2 library gives consumed bytes back to the peer, for a
// window of limit bytes of which the peer may still send peerLeft and owed are consumed and not
// yet given back. oghttp2's WindowManager (DefaultShouldWindowUpdateFn, which Envoy keeps) sends
// once a third of the window is owed, or as soon as the peer has less than half left; nghttp2
// (nghttp2_should_send_window_update) once half is owed. The difference shows across a round
// trip: with nghttp2's rule a client whose frames do not split the window in halves waits an
// extra round trip now and then.
func (sc *serverConn) windowUpdateDue(limit, peerLeft, owed int64) bool {
	if owed <= 0 {
		return false
	}
	if sc.codec == CodecNghttp2 {
		return owed >= limit/2
	}
	return owed >= limit/3 || peerLeft < limit/2
}

func (sc *serverConn) sendWindowUpdate(id uint32, n int64) {
	sc.wmu.Lock()
	if !sc.refusing() {
		_ = sc.fr.WriteWindowUpdate(id, uint32(n))
		sc.counted(false, false)
		sc.flush()
	}
	sc.wmu.Unlock()
	sc.afterWrite()
}

// flushAllLocked sends what the streams blocked on a window may now send, in the order they
// blocked (mu held).
func (sc *serverConn) flushAllLocked() {
	blocked := sc.blocked
	sc.blocked = nil
	for _, st := range blocked {
		st.blocked = false
		sc.flushStreamLocked(st)
	}
}

// flushStreamLocked sends as much of a stream's buffered response as both windows allow, and
// its END_STREAM once the buffer is empty (mu held; takes wmu). oghttp2 sends a DATA frame
// when it has payload or ends the stream (WriteForStream); each counts against Envoy's
// outbound limits.
func (sc *serverConn) flushStreamLocked(st *stream) {
	if st.reset_ || st.ctx.Err() != nil {
		return
	}
	wrote := false
	defer func() {
		if wrote {
			sc.afterWrite()
		}
	}()
	for {
		if st.pending.Len() == 0 {
			if st.endPending {
				st.endPending = false
				sc.wmu.Lock()
				if !sc.refusing() {
					_ = sc.fr.WriteData(st.id, true, nil)
					sc.counted(false, true)
					wrote = true
				}
				sc.endLocalLocked(st)
				sc.flush()
				sc.wmu.Unlock()
				sc.cond.Broadcast()
			}
			return
		}
		n := min(int64(st.pending.Len()), sc.connSendWindow, st.sendWindow, int64(sc.peerMaxFrame.Load()))
		if n <= 0 {
			if !st.blocked {
				st.blocked = true
				sc.blocked = append(sc.blocked, st)
			}
			return
		}
		sc.wmu.Lock()
		if sc.refusing() {
			sc.wmu.Unlock()
			return
		}
		sc.connSendWindow -= n
		st.sendWindow -= n
		chunk := st.pendingNext(int(n))
		last := st.endPending && st.pending.Len() == 0
		_ = sc.fr.WriteData(st.id, last, chunk)
		sc.counted(false, true)
		wrote = true
		if last {
			st.endPending = false
			sc.endLocalLocked(st)
		}
		sc.flush()
		sc.wmu.Unlock()
		st.touch()
		sc.cond.Broadcast()
	}
}
