package emulator

// The session's control frames: PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY and
// WINDOW_UPDATE, and the send windows SETTINGS_INITIAL_WINDOW_SIZE moves (the stream frames are
// h2session.go's).

import (
	"golang.org/x/net/http2"
)

// onPriority: oghttp2 ignores priorities (OnPriority is empty).
func (sc *serverConn) onPriority(uint32, priorityFields) bool { return true }

// onRstStream is OgHttp2Session::OnRstStream: a reset of a stream that never existed is a
// connection error; of one that is gone, nothing. nghttp2 rate-limits resets
// (nghttp2_option_set_stream_reset_rate_limit).
func (sc *serverConn) onRstStream(id uint32, code http2.ErrCode) bool {
	s := &sc.sess
	st := sc.h2stream(id)
	if st == nil {
		if id > s.highestProcessed {
			if sc.og() {
				sc.latch(http2.ErrCodeProtocol, "kWrongFrameSequence")
			} else {
				sc.failVisitor() // "RST_STREAM: stream in idle"
			}
			return false
		}
	} else if !st.reset_ {
		sc.clientReset(st, code)
	}
	// nghttp2 drains a token for every RST_STREAM past the idle check, of a live stream or a
	// closed one (nghttp2_session_on_rst_stream_received, session_update_stream_reset_ratelim).
	if !sc.og() && !sc.takeResetToken() {
		sc.latch(http2.ErrCodeInternal, "")
		return false
	}
	return true
}

// onSettings queues the acknowledgement at the frame's start (OgHttp2Session::OnSettings);
// the settings take effect as they are read.
func (sc *serverConn) onSettings() bool {
	sc.enqueue(outFrame{typ: http2.FrameSettings, ack: true})
	return true
}

// onSetting is OgHttp2Session::OnSetting (nghttp2: nghttp2_session_on_settings_received, whose
// errors go through Envoy's callback, which fails).
func (sc *serverConn) onSetting(set http2.Setting) bool {
	bad := func(code http2.ErrCode, why string) bool {
		if sc.og() {
			sc.latch(code, why)
		} else {
			sc.failVisitor()
		}
		return false
	}
	switch set.ID {
	case http2.SettingEnablePush:
		if set.Val > 1 {
			return bad(http2.ErrCodeProtocol, "InvalidSetting")
		}
	case http2.SettingInitialWindowSize:
		if set.Val > 1<<31-1 {
			return bad(http2.ErrCodeFlowControl, "FlowControlError")
		}
		sc.updateSendWindows(int64(set.Val))
	case http2.SettingMaxFrameSize:
		if set.Val < 16384 || set.Val > 1<<24-1 {
			return bad(http2.ErrCodeProtocol, "InvalidSetting")
		}
		sc.peerMaxFrame.Store(set.Val)
	case http2.SettingEnableConnectProtocol:
		if set.Val > 1 {
			return bad(http2.ErrCodeProtocol, "InvalidSetting")
		}
	case http2.SettingHeaderTableSize:
		v := min(set.Val, maxHpackTable)
		if n := len(sc.sess.queue); n > 0 && sc.sess.queue[n-1].ack {
			sc.sess.queue[n-1].tableSize = &v // applied as the acknowledgement is written
		}
	}
	return true
}

// maxHpackTable is oghttp2's kMaximumHpackTableCapacity.
const maxHpackTable = 64 << 10

func (sc *serverConn) onSettingsEnd() bool { return true }

// onSettingsAck puts our stream cap in force.
func (sc *serverConn) onSettingsAck() bool {
	sc.mu.Lock()
	sc.ackedMaxStreams = sc.cfg.MaxConcurrentStreams
	sc.mu.Unlock()
	return true
}

// onPing: oghttp2 answers every PING (auto_ping_ack); an answer to ours needs nothing.
func (sc *serverConn) onPing(data [8]byte, ack bool) bool {
	if !ack {
		sc.enqueue(outFrame{typ: http2.FramePing, ack: true, ping: data})
	}
	return true
}

// onGoAway: Envoy's connection manager does nothing with a client's GOAWAY
// (ConnectionManagerImpl::onGoAway); a second one that raises the last stream id is an error.
// nghttp2 stops reading once the client has gone away and no stream is left
// (nghttp2_session_want_read).
func (sc *serverConn) onGoAway(last uint32, code http2.ErrCode, debug []byte) bool {
	s := &sc.sess
	if s.goAwayRecv && last > s.goAwayRecvLast {
		sc.failVisitor()
		return false
	}
	s.goAwayRecv, s.goAwayRecvLast = true, last
	if !sc.og() {
		sc.mu.Lock()
		none := sc.open == 0
		sc.mu.Unlock()
		if none {
			s.ignoreInput = true
			return false
		}
	}
	return true
}

// onWindowUpdate is OgHttp2Session::OnWindowUpdate (nghttp2: its errors go through Envoy's
// callback, which fails).
func (sc *serverConn) onWindowUpdate(id uint32, inc uint32) bool {
	s := &sc.sess
	if id == 0 {
		if inc == 0 {
			return sc.windowError(http2.ErrCodeProtocol)
		}
		sc.mu.Lock()
		over := sc.connSendWindow > 0 && int64(inc) > 1<<31-1-sc.connSendWindow
		if !over {
			sc.connSendWindow += int64(inc)
			sc.flushAllLocked()
			sc.cond.Broadcast()
		}
		sc.mu.Unlock()
		if over {
			return sc.windowError(http2.ErrCodeFlowControl)
		}
		return true
	}
	st := sc.h2stream(id)
	if inc == 0 {
		if !sc.og() {
			sc.failVisitor()
			return false
		}
		if st != nil || id <= s.highestProcessed {
			if st != nil {
				sc.resetStream(st, http2.ErrCodeProtocol)
			} else {
				sc.enqueue(outFrame{typ: http2.FrameRSTStream, stream: id, code: http2.ErrCodeProtocol})
			}
			return true
		}
	}
	if st == nil {
		if id > s.highestProcessed {
			if sc.og() {
				sc.latch(http2.ErrCodeProtocol, "kWrongFrameSequence")
			} else {
				sc.failVisitor()
			}
			return false
		}
		return true
	}
	if st.reset_ {
		return true
	}
	sc.mu.Lock()
	over := st.sendWindow > 0 && int64(inc) > 1<<31-1-st.sendWindow
	if !over {
		st.sendWindow += int64(inc)
		sc.flushStreamLocked(st)
		sc.cond.Broadcast()
	}
	sc.mu.Unlock()
	if over {
		if !sc.og() {
			sc.failVisitor() // nghttp2 queues the RST, then Envoy's callback fails
			return false
		}
		sc.resetStream(st, http2.ErrCodeFlowControl)
	}
	return true
}

// windowError is a connection-level WINDOW_UPDATE error.
func (sc *serverConn) windowError(code http2.ErrCode) bool {
	if sc.og() {
		sc.latch(code, "FlowControlError")
	} else {
		sc.failVisitor()
	}
	return false
}

// updateSendWindows applies a new SETTINGS_INITIAL_WINDOW_SIZE to every stream's send window
// (UpdateStreamSendWindowSizes): one pushed past 2^31-1 is reset with FLOW_CONTROL_ERROR.
func (sc *serverConn) updateSendWindows(v int64) {
	var over []*stream
	sc.mu.Lock()
	delta := v - sc.peerInitWindow
	sc.peerInitWindow = v
	for _, st := range sc.streams {
		if st.h2closed {
			continue
		}
		if st.sendWindow+delta > 1<<31-1 {
			over = append(over, st)
			continue
		}
		st.sendWindow += delta
	}
	sc.flushAllLocked()
	sc.cond.Broadcast()
	sc.mu.Unlock()
	for _, st := range over {
		sc.resetStream(st, http2.ErrCodeFlowControl)
	}
}
