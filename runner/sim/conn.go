package sim

import (
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// A connection between a client model and a pod, seen from both ends: the client's view (ready,
// a GOAWAY seen, streams in flight) and the gateway's (the worker it is pinned to, the listener
// it was accepted under, its streams, requests and drain). What crosses it takes half the
// client round-trip time each way; responses leave through the client's read loop, one
// connection's bytes at a time (Config.ClientRead), and Envoy's per-connection buffer limit
// pauses the upstreams when that falls behind (model.Listener.HighWatermark).
type conn struct {
	p     *Pool
	id    int
	peer  string // the client's address as the pod sees it: its worker pick hashes it
	owner connOwner
	ow    int64 // the one-way delay between the two ends

	// the gateway's side
	pod              *Pod
	w                *worker
	cfg              *model.Listener
	accepted         int64
	open             int    // streams open on the gateway
	requests         uint64 // streams begun (max_requests_per_connection)
	drain            model.Drain
	listenerDraining bool
	closed           bool // the gateway is done with it
	// wire is when the client's read loop will have taken every byte queued so far: the
	// connection's write buffer holds (wire - now) x ClientRead bytes.
	wire int64
	// blocked are the writes waiting for the write buffer to drain to its low watermark, in the
	// order they came; resumeArmed: their wake-up is scheduled.
	blocked     []blocked
	resumeArmed bool
	// unbounded: the reader takes bytes as they come (Envoy reading its upstream), not at a
	// client's read rate.
	unbounded bool

	// the client's side
	ready, goAway, gone bool
	inflight            int                  // the client's streams not yet ended
	peerMax             uint32               // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	settingsSeen        bool                 // the client has the server's SETTINGS
	opened              int64                // when the client started dialling
	served              int64                // requests this connection completed for the client
	streams             map[*stream]struct{} // the client's streams in flight
	use                 *connUse
}

// connOwner is the client model a connection reports to, at client time.
type connOwner interface {
	onReady(c *conn)
	onGoAway(c *conn)
	onClosed(c *conn)
}

// oneWay is the delay between clients and the gateway in each direction.
func (p *Pool) oneWay() int64 { return int64(p.cfg.ClientRTT / 2) }

// dialLatency is what a TCP connect costs a client on loopback before the round trip.
const dialLatency = 50 * time.Microsecond

// dial opens a connection for a client through the gateway's L4 balancer, or straight to pod
// when not nil (a headless Service's address, as gRPC's round_robin dials).
func (p *Pool) dial(owner connOwner, pod *Pod) *conn {
	return p.dialTier(owner, p.gateway, p.l4, pod, p.oneWay())
}

// dialTier opens a connection to a tier through its L4 balancer (its model.L4 pick among the
// serving pods, once for the connection's life), or straight to pod when not nil and serving.
// The pod accepts it ow later; the dialer can use it once the server's SETTINGS are back, ow
// after that.
func (p *Pool) dialTier(owner connOwner, tier []*Pod, l4 *model.L4, pod *Pod, ow int64) *conn {
	p.nextConn++
	c := &conn{p: p, id: p.nextConn, owner: owner, ow: ow, opened: p.Sim.Tick(), streams: map[*stream]struct{}{},
		peer: fmt.Sprintf("127.0.0.1:%d", 32768+p.rng.IntN(28232))}
	p.Sim.At(p.Sim.Tick()+int64(dialLatency)+ow, func() {
		target := pod
		if target == nil || !target.Serving() {
			ready := serving(tier)
			if i := l4.Pick(len(ready), "127.0.0.1"); i >= 0 {
				target = ready[i]
			} else {
				target = nil
			}
		}
		if target == nil {
			c.closed = true
			p.Sim.At(p.Sim.Tick()+ow, c.clientGone) // connection refused
			return
		}
		target.accept(c)
		c.accepted = p.Sim.Tick()
		c.peerMax = c.cfg.MaxConcurrentStreams
		p.Sim.At(p.Sim.Tick()+ow, func() {
			if c.gone {
				return
			}
			c.ready = true
			owner.onReady(c)
		})
	})
	return c
}

// armTimers starts max_connection_duration and idle_timeout as Envoy does at accept.
func (c *conn) armTimers() {
	if d := c.cfg.MaxConnDuration; d > 0 {
		c.p.Sim.After(d, func() {
			if !c.closed {
				c.pod.hcm.MaxDurationReached.Inc()
				c.startDrain("max_connection_duration")
			}
		})
	}
	if c.cfg.IdleTimeout > 0 {
		c.armIdle()
	}
}

// armIdle checks idle_timeout once it could have passed with no stream open.
func (c *conn) armIdle() {
	at := c.p.Sim.Tick() + int64(c.cfg.IdleTimeout)
	c.p.Sim.At(at, func() {
		if c.closed || c.open > 0 || c.drain.State != model.NotDraining {
			return
		}
		c.pod.hcm.CxIdleTimeout.Inc()
		c.startDrain("idle_timeout")
	})
}

// startDrain begins Envoy's drain sequence (model.Drain): the shutdown notice now, the final
// GOAWAY after drain_timeout, the close once no stream is open. It reports whether this call
// started it.
func (c *conn) startDrain(reason string) bool {
	if c.closed || !c.drain.Start(reason) {
		return false
	}
	h := c.pod.hcm
	h.DrainStarted.Inc()
	h.GoAwaySent.Inc()
	c.toClient(func() { c.seeGoAway() })
	c.p.Sim.After(model.FinalAfter(c.cfg), func() {
		if c.closed || !c.drain.Final() {
			return
		}
		h.GoAwayFinal.Inc()
		h.GoAwaySent.Inc()
		if c.open == 0 {
			c.closeAfterFlush()
		}
	})
	return true
}

// drainForListener is the connection manager's check, as a response is encoded, of its
// listener's drain (a replaced listener, a terminating pod): the drain starts at the next
// response, and only a drain started here counts in downstream_cx_drain_close.
func (c *conn) drainForListener() {
	if c.listenerDraining && c.startDrain("listener_drain") {
		c.pod.hcm.DrainClose.Inc()
	}
}

// toClient runs f at the client half a round trip from now.
func (c *conn) toClient(f func()) { c.p.Sim.At(c.p.Sim.Tick()+c.ow, f) }

// seeGoAway is a GOAWAY reaching the client: x/net's ClientConn and grpc-go's transport take no
// new stream on the connection from then on, and close it once its streams are done (x/net
// http2 transport.go ClientConn.forgetStreamID: closeOnIdle when goAway is set).
func (c *conn) seeGoAway() {
	if c.gone || c.goAway {
		return
	}
	c.goAway = true
	c.owner.onGoAway(c)
	c.closeIfIdle()
}

// closeIfIdle is the client closing a connection it may not use any more once its last stream
// is done.
func (c *conn) closeIfIdle() {
	if c.goAway && c.inflight == 0 && !c.gone {
		c.clientClose()
	}
}

// clientClose is the client closing the connection: the gateway sees the close half a round
// trip later (downstream_cx_destroy_remote).
func (c *conn) clientClose() {
	if c.gone {
		return
	}
	c.gone = true
	c.owner.onClosed(c)
	c.p.Sim.At(c.p.Sim.Tick()+c.ow, func() { c.closeBy(false, "client closed") })
}

// clientGone is the gateway's close reaching the client: its streams still in flight fail.
func (c *conn) clientGone() {
	if c.gone {
		return
	}
	c.gone = true
	for st := range c.streams {
		st.fail()
	}
	c.owner.onClosed(c)
}

// closeAfterFlush is Envoy's close after its final GOAWAY: the client, which saw the GOAWAY and
// has no stream left, closes first (closeIfIdle), within the delayed close timeout.
func (c *conn) closeAfterFlush() {
	c.p.Sim.After(model.DelayedCloseTimeout, func() {
		if !c.closed {
			c.pod.hcm.DelayedCloseTimeout.Inc()
			c.closeByUs("delayed close timeout")
		}
	})
}

// closeByUs is the gateway closing the connection (a listener drained, a pod killed).
func (c *conn) closeByUs(reason string) { c.closeBy(true, reason) }

// closeBy closes the gateway's side: its streams reset (the client sees them fail), the work
// its worker had not started dropped (model.WorkerQ.Drop), the connection's stats counted on the
// side that closed.
func (c *conn) closeBy(local bool, reason string) {
	if c.closed || c.pod == nil {
		return
	}
	c.closed = true
	h, p := c.pod.hcm, c.p
	h.CxDestroy.Inc()
	if local {
		h.CxDestroyLocal.Inc()
		if c.open > 0 {
			h.CxDestroyLocalActiveRq.Inc()
		}
		c.toClient(c.clientGone)
	} else {
		h.CxDestroyRemote.Inc()
		if c.open > 0 {
			h.CxDestroyRemoteActiveRq.Inc()
		}
	}
	if c.open > 0 {
		h.CxDestroyActiveRq.Inc()
		h.RqRxReset.Add(int64(c.open))
		h.RqActive.Add(-int64(c.open))
		c.open = 0
	}
	for _, s := range []*model.Stat{h.CxActive, h.LCxActive, c.w.st.CxActive, h.CxHTTP2Active} {
		s.Dec()
	}
	ms := float64(p.Sim.Tick()-c.accepted) / float64(time.Millisecond)
	h.CxLength.Observe(ms)
	h.LCxLength.Observe(ms)
	c.w.active--
	c.unblock()
	delete(c.pod.conns, c)
	now := p.Sim.Now()
	if c.w.q.Drop(now, c) > 0 {
		for _, it := range c.w.q.Pending() {
			if f, ok := it.Tag.(func()); ok {
				p.Sim.At(p.Sim.TickOf(it.End), f)
			}
		}
	}
	_ = reason
}

// book queues d of work for the connection on its worker and runs done when it is done: at the
// work's End, which a Drop may move earlier (closeBy then runs the continuation, it.Tag, at the
// new End, and the event at the old one finds itself stale).
func (c *conn) book(it *model.Item, d time.Duration, done func()) {
	s := c.p.Sim
	c.w.q.Book(s.Now(), c, d, it)
	fired := false
	run := func() {
		if fired || it.Dropped || s.Tick() != s.TickOf(it.End) {
			return
		}
		fired = true
		done()
	}
	it.Tag = run
	s.At(s.TickOf(it.End), run)
}

// queued is how many bytes the connection's write buffer holds now.
func (c *conn) queued() int64 {
	if c.unbounded {
		return 0
	}
	ahead := c.wire - c.p.Sim.Tick()
	if ahead <= 0 {
		return 0
	}
	return int64(float64(ahead) * c.p.cfg.ClientRead / 1e9)
}

// put queues n bytes for the client's read loop and returns when it has read them (tick).
func (c *conn) put(n int64) int64 {
	if c.unbounded {
		return c.p.Sim.Tick()
	}
	start := max(c.wire, c.p.Sim.Tick())
	c.wire = start + int64(float64(n)/c.p.cfg.ClientRead*1e9)
	return c.wire
}

// blocked is a write that found the connection's write buffer over its high watermark: its
// chunk (n bytes, counted in the cluster's rx_bytes_buffered while it waits) and what to do
// when the buffer is down to its low watermark.
type blocked struct {
	cl     *model.ClusterStats
	n      int64
	resume func()
}

// block makes a write wait until the write buffer is down to its low watermark (Envoy's
// connection write buffer watermarks, model.Listener.HighWatermark and LowWatermark): then every
// write waiting is woken and writes its chunk, in the order they came.
func (c *conn) block(b blocked) {
	b.cl.RxBuffered.Add(b.n)
	c.blocked = append(c.blocked, b)
	if !c.resumeArmed {
		c.resumeArmed = true
		c.armResume()
	}
}

// armResume schedules the wake-up for when the bytes queued now have been read down to the
// low watermark.
func (c *conn) armResume() {
	at := c.wire - int64(float64(c.cfg.LowWatermark())/c.p.cfg.ClientRead*1e9)
	c.p.Sim.At(at, func() {
		if c.closed {
			return // closeBy let the waiting writes go
		}
		if c.queued() > c.cfg.LowWatermark() {
			c.armResume()
			return
		}
		woken := c.blocked
		c.blocked, c.resumeArmed = nil, false
		for _, b := range woken {
			b.cl.RxBuffered.Add(-b.n)
		}
		for _, b := range woken {
			b.resume()
		}
	})
}

// unblock lets the waiting writes go when the connection closes: their bytes are dropped.
func (c *conn) unblock() {
	for _, b := range c.blocked {
		b.cl.RxBuffered.Add(-b.n)
	}
	c.blocked, c.resumeArmed = nil, false
}
