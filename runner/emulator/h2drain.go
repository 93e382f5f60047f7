package emulator

import (
	"errors"
	"time"

	"golang.org/x/net/http2"
)

// A connection's life after it is set up: the timers that end it (max_connection_duration,
// idle_timeout), Envoy's two-step GOAWAY drain, and the teardown once its last stream is done.

type drainState int

const (
	notDraining drainState = iota
	noticeSent             // GOAWAY(2^31-1) sent, new streams still accepted until drain_timeout
	finalSent              // GOAWAY(last id) sent, closing when the last stream ends
)

// armTimers starts max_connection_duration and idle_timeout.
func (sc *serverConn) armTimers() {
	if d := sc.cfg.maxConnDuration; d > 0 {
		t := time.AfterFunc(d, func() {
			sc.h.maxDurationReached.Inc()
			sc.startDrain("max_connection_duration")
		})
		go func() { <-sc.ctx.Done(); t.Stop() }()
	}
	if d := sc.cfg.idleTimeout; d > 0 {
		sc.mu.Lock()
		sc.idleTimer = time.AfterFunc(d, func() {
			sc.h.cxIdleTimeout.Inc()
			sc.startDrain("idle_timeout")
		})
		sc.mu.Unlock()
	}
}

// startDrain begins Envoy's drain sequence: a GOAWAY with the largest stream id as a shutdown
// notice, then after drain_timeout a GOAWAY with the last stream id really processed, then
// close as soon as no stream is open. Clients move new requests to a new connection at the
// notice; streams already open finish.
func (sc *serverConn) startDrain(reason string) {
	sc.mu.Lock()
	if sc.drain != notDraining || sc.closing {
		sc.mu.Unlock()
		return
	}
	sc.drain = noticeSent
	sc.drainReason = reason
	sc.mu.Unlock()
	sc.h.drainStarted.Inc()
	sc.h.pod.pool.obs.drains.Add(1)
	sc.writeGoAway(1<<31-1, http2.ErrCodeNo)
	time.AfterFunc(sc.cfg.drainTimeout, sc.finalGoAway)
}

func (sc *serverConn) finalGoAway() {
	sc.mu.Lock()
	if sc.drain != noticeSent || sc.closing {
		sc.mu.Unlock()
		return
	}
	sc.drain = finalSent
	last := sc.maxClientID
	empty := len(sc.streams) == 0
	sc.mu.Unlock()
	sc.writeGoAway(last, http2.ErrCodeNo)
	if empty {
		sc.h.drainClose.Inc()
		sc.closeAfterFlush()
	}
}

func (sc *serverConn) writeGoAway(last uint32, code http2.ErrCode) {
	sc.h.goAwaySent.Inc()
	sc.wmu.Lock()
	_ = sc.fr.WriteGoAway(last, code, nil)
	sc.flush()
	sc.wmu.Unlock()
}

// goAwayNow sends a final GOAWAY with an error code and closes.
func (sc *serverConn) goAwayNow(code http2.ErrCode) {
	sc.mu.Lock()
	last := sc.maxClientID
	sc.mu.Unlock()
	sc.writeGoAway(last, code)
	sc.closeAfterFlush()
}

// closeAfterFlush gives the writer a moment to put the last frames on the wire; closing a
// socket with unread input makes the kernel send RST and lose them.
func (sc *serverConn) closeAfterFlush() {
	deadline := time.Now().Add(time.Second)
	for sc.queued.Load() > 0 && time.Now().Before(deadline) && sc.ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if cw, ok := sc.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	time.AfterFunc(100*time.Millisecond, func() { sc.close("") })
}

// streamDone removes a finished stream and closes a draining connection that has none left.
func (sc *serverConn) streamDone(st *stream) {
	sc.mu.Lock()
	if sc.streams[st.id] != st {
		sc.mu.Unlock()
		return
	}
	delete(sc.streams, st.id)
	sc.atCap = sc.h.pod.pool.obs.streams(int64(len(sc.streams)), int64(sc.cfg.maxConcurrentStreams), sc.atCap)
	empty := len(sc.streams) == 0
	final := sc.drain == finalSent
	peerGone := sc.peerGoneAway
	if empty && sc.idleTimer != nil && sc.drain == notDraining {
		sc.idleTimer.Reset(sc.cfg.idleTimeout)
	}
	sc.mu.Unlock()
	sc.h.rqActive.Dec()
	if empty && final {
		sc.h.drainClose.Inc()
		sc.closeAfterFlush()
	} else if empty && peerGone {
		sc.close("")
	}
}

// close tears the connection down once.
func (sc *serverConn) close(reason string) {
	sc.closeOnce.Do(func() {
		sc.mu.Lock()
		sc.closing = true
		streams := make([]*stream, 0, len(sc.streams))
		for _, st := range sc.streams {
			streams = append(streams, st)
		}
		if sc.idleTimer != nil {
			sc.idleTimer.Stop()
		}
		if sc.atCap {
			sc.atCap = false
			sc.h.pod.pool.obs.atCap.Add(-1)
		}
		sc.cond.Broadcast()
		sc.mu.Unlock()
		sc.cancel()
		_ = sc.nc.Close()
		for _, st := range streams {
			st.abort(errors.New("connection closed"))
		}
		sc.h.connClosed(sc, reason)
	})
}
