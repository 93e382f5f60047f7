package emulator

import (
	"errors"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
)

// A connection's life after it is set up: the timers that end it (max_connection_duration,
// idle_timeout), Envoy's two-step GOAWAY drain, and the teardown once its last stream is done.

// armTimers starts max_connection_duration and idle_timeout.
func (sc *serverConn) armTimers() {
	if d := sc.cfg.MaxConnDuration; d > 0 {
		t := time.AfterFunc(d, func() {
			sc.h.MaxDurationReached.Inc()
			sc.timeout("max_connection_duration")
		})
		go func() { <-sc.ctx.Done(); t.Stop() }()
	}
	if d := sc.cfg.IdleTimeout; d > 0 {
		sc.mu.Lock()
		sc.idleTimer = time.AfterFunc(d, func() {
			sc.h.CxIdleTimeout.Inc()
			sc.timeout("idle_timeout")
		})
		sc.mu.Unlock()
	}
}

// timeout is ConnectionManagerImpl::onIdleTimeout and onConnectionDurationTimeout once the
// counter is counted: with no codec yet the connection is closed (FlushWrite, nothing to
// flush: no GOAWAY, there is no codec to send one), else the drain sequence starts.
func (sc *serverConn) timeout(reason string) {
	if !sc.hasCodec.Load() {
		sc.closeByUs(reason + " before any codec")
		return
	}
	if !sc.h2.Load() {
		// Bytes that are not HTTP/2's preface begin an HTTP/1 request, a stream that holds
		// the idle timer off (ConnectionManagerImpl::newStream); the lab answers it and
		// closes (h1reject.go).
		return
	}
	sc.startDrain(reason)
}

// startDrain begins Envoy's drain sequence: a GOAWAY with the largest stream id as a shutdown
// notice, then after drain_timeout a GOAWAY with the last stream id really processed, then
// close as soon as no stream is open. Clients move new requests to a new connection at the
// notice; streams already open finish. It reports whether this call started the drain.
func (sc *serverConn) startDrain(reason string) bool {
	sc.mu.Lock()
	if sc.closing || !sc.drain.Start(reason) {
		sc.mu.Unlock()
		return false
	}
	sc.mu.Unlock()
	sc.h.DrainStarted.Inc()
	sc.h.pod.pool.obs.drains.Add(1)
	var debug []byte
	if sc.h.pod.pool.cfg.Codec == CodecOghttp2 {
		debug = []byte("graceful_shutdown") // oghttp2's StartGracefulShutdown says why
	}
	sc.writeGoAway(1<<31-1, http2.ErrCodeNo, debug)
	time.AfterFunc(model.FinalAfter(sc.cfg), sc.finalGoAway)
	return true
}

func (sc *serverConn) finalGoAway() {
	sc.mu.Lock()
	if sc.closing || !sc.drain.Final() {
		sc.mu.Unlock()
		return
	}
	last := sc.lastStreamID()
	empty := len(sc.streams) == 0
	sc.mu.Unlock()
	sc.writeGoAway(last, http2.ErrCodeNo, nil)
	sc.h.GoAwayFinal.Inc()
	if empty {
		sc.closeAfterFlush()
	}
}

// drainForListener is the connection manager's check of its listener's drain decision, made
// as a response is encoded: with Istio's --drain-strategy immediate every connection of a
// draining listener starts its drain at its next response, and only this drain counts in
// downstream_cx_drain_close.
func (sc *serverConn) drainForListener() {
	if sc.startDrain("listener_drain") {
		sc.h.DrainClose.Inc()
	}
}

// lastStreamID is the last stream id a final GOAWAY names (mu held): oghttp2 names the
// highest stream id it saw in any frame header (highest_received_stream_id_), nghttp2 the last
// stream it accepted.
func (sc *serverConn) lastStreamID() uint32 {
	if sc.codec == CodecNghttp2 {
		return sc.sess.highestProcessed
	}
	return sc.sess.highestReceived
}

func (sc *serverConn) writeGoAway(last uint32, code http2.ErrCode, debug []byte) {
	select {
	case <-sc.prefaced:
	default:
		// A drain started by a request of the connection's first dispatch: Envoy queues the
		// notice behind the SETTINGS it queued as the codec was made (one send queue), so it
		// goes out once they have.
		go func() {
			select {
			case <-sc.prefaced:
				sc.writeGoAway(last, code, debug)
			case <-sc.ctx.Done():
			}
		}()
		return
	}
	sc.h.GoAwaySent.Inc()
	sc.wmu.Lock()
	if !sc.refusing() {
		_ = sc.fr.WriteGoAway(last, code, debug)
		sc.counted(false, false)
		sc.flush()
	}
	sc.wmu.Unlock()
	sc.afterWrite()
}

// delayedCloseTimeout is the HCM's delayed_close_timeout default.
const delayedCloseTimeout = time.Second

// closeAfterFlush is Envoy's FlushWriteAndDelay close: the last frames go out, then the
// gateway ignores further input and waits up to delayed_close_timeout for the client to close
// first. A client that does is counted as the closing side (downstream_cx_destroy_remote);
// otherwise the gateway closes (destroy_local, downstream_cx_delayed_close_timeout).
func (sc *serverConn) closeAfterFlush() {
	if !sc.delayedClose.CompareAndSwap(false, true) {
		return
	}
	sc.resetAllStreams(true)
	deadline := time.Now().Add(delayedCloseTimeout)
	go func() {
		for sc.queued.Load() > 0 && time.Now().Before(deadline) && sc.ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		t := time.AfterFunc(time.Until(deadline), func() {
			if sc.ctx.Err() == nil {
				sc.h.DelayedCloseTimeout.Inc()
				sc.closeByUs("delayed close timeout")
			}
		})
		<-sc.ctx.Done()
		t.Stop()
	}()
}

// streamDone removes a finished stream and closes a draining connection that has none left.
func (sc *serverConn) streamDone(st *stream) {
	sc.mu.Lock()
	if sc.streams[st.id] != st {
		sc.mu.Unlock()
		return
	}
	delete(sc.streams, st.id)
	if !st.h2closed { // the handler gave up on a stream the client had not ended
		st.h2closed = true
		sc.open--
	}
	sc.atCap = sc.h.pod.pool.obs.streams(int64(sc.open), int64(sc.cfg.MaxConcurrentStreams), sc.atCap)
	empty := len(sc.streams) == 0
	final := sc.drain.ClosesWhenIdle()
	if empty && sc.idleTimer != nil && sc.drain.State == model.NotDraining {
		sc.idleTimer.Reset(sc.cfg.IdleTimeout)
	}
	closing := sc.closing
	sc.mu.Unlock()
	st.stopDurationTimer()
	st.release()
	if st.envoy {
		sc.h.RqActive.Dec()
		sc.h.streamDestroyed(st, closing)
	}
	if empty && final {
		sc.closeAfterFlush()
	}
}

// resetAllStreams is the connection manager giving up on every stream of a connection it
// closes (doConnectionClose, resetAllStreams): each is reset (downstream_rq_rx_reset), work the
// worker has not started for it is dropped, and whether requests were active is counted by the
// side that closed (local: the gateway).
func (sc *serverConn) resetAllStreams(local bool) {
	sc.w.Drop(sc)
	sc.mu.Lock()
	sc.closing = true
	streams := make([]*stream, 0, len(sc.streams))
	active := false
	for _, st := range sc.streams {
		streams = append(streams, st)
		active = active || st.envoy
	}
	if active && sc.rqSide == 0 {
		sc.rqSide = sideRemote
		if local && !sc.misattributed.Load() {
			sc.rqSide = sideLocal
		}
	}
	sc.cond.Broadcast()
	sc.mu.Unlock()
	for _, st := range streams {
		sc.streamReset(st, errConnClosed)
	}
}

var errConnClosed = errors.New("connection closed")

// close tears the connection down once. The side that closed is the gateway if it had
// decided to (closedByUs), else the client.
func (sc *serverConn) close(reason string) {
	sc.closeOnce.Do(func() {
		sc.mu.Lock()
		sc.closing = true
		if sc.idleTimer != nil {
			sc.idleTimer.Stop()
		}
		if sc.atCap {
			sc.atCap = false
			sc.h.pod.pool.obs.atCap.Add(-1)
		}
		sc.cond.Broadcast()
		sc.mu.Unlock()
		sc.wmu.Lock()
		sc.wclosed = true
		sc.wmu.Unlock()
		sc.cancel()
		sc.in.wake()
		_ = sc.nc.Close()
		sc.resetAllStreams(sc.closedByUs.Load())
		sc.h.connClosed(sc, sc.closedByUs.Load(), sc.rqSide, reason)
		sc.releaseBuffers()
	})
}

// Which side's counter a connection's active requests were counted under.
const (
	sideLocal  = 1
	sideRemote = 2
)

// closeByUs closes the connection at once from the gateway's side (its pod went away, its
// delayed close timed out).
func (sc *serverConn) closeByUs(reason string) {
	sc.closedByUs.Store(true)
	sc.close(reason)
}

// closeWithListener closes a connection whose listener (or filter chain) finished draining.
// Envoy closes it without flushing; the streams still open on it are counted as
// downstream_cx_destroy_remote_active_rq although the close is local, which Envoy's source
// notes as a known misattribution.
func (sc *serverConn) closeWithListener() {
	sc.misattributed.Store(true)
	sc.closeByUs("listener drained")
}
