package sim

import (
	"time"

	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/model"
)

// grpcClient: n ClientConns (connections, default 1); goroutine i uses ClientConn i mod n. With
// pick_first each ClientConn keeps one connection through the Service address; with round_robin
// one to each pod's address (a headless Service; resolved again on a lost connection, as
// model.Resolution says), picking among the ready ones in turn
// (grpc-go balancer/roundrobin). A stream over a connection's cap waits for a stream of its own
// connection to end (grpcTransport). Unary goroutines send one call at a time; the stream modes
// hold one long-lived stream each (grpclab stream.go), opened again 20 ms after one fails.
type grpcClient struct {
	p   *Pool
	s   load.Spec
	r   *recorder
	ccs []*clientConn
}

func (g *grpcClient) recorder() *recorder { return g.r }

func (g *grpcClient) start() {
	n := max(g.s.Connections, 1)
	streams := g.s.Mode == "server-stream" || g.s.Mode == "bidi"
	g.r.longStreams = streams
	for range n {
		g.ccs = append(g.ccs, newClientConn(g.p, g.r, g.s.LB == load.RoundRobin))
	}
	for i := range g.s.Concurrency {
		cc := g.ccs[i%n]
		if streams {
			g.holdStream(cc)
		} else {
			g.unary(cc)
		}
	}
}

func (g *grpcClient) unary(cc *clientConn) {
	if g.r.stopped {
		return
	}
	st := g.r.newStream(request{grpc: true, resp: grpcPayload, body: 5 + 16})
	// A call's latency starts when it is made: the wait for stream quota at a capped
	// connection is part of it (grpc-go's Invoke blocks in NewStream).
	issued := g.p.Sim.Tick()
	st.done = func(st *stream, ok bool) {
		g.r.record(ok, false, issued)
		g.unary(cc)
	}
	cc.send(st)
}

// holdStream opens one long-lived stream: messages of message_bytes at the rate, as many as
// the window needs (grpclab serverStream asks for ceil((until the deadline + 1 s) / interval)).
func (g *grpcClient) holdStream(cc *clientConn) {
	if g.r.stopped {
		return
	}
	rate := g.s.Rate
	if rate <= 0 {
		rate = 10
	}
	bytes := int64(g.s.MessageBytes)
	if bytes <= 0 {
		bytes = 1024
	}
	iv := time.Duration(interval(rate))
	left := time.Duration(g.r.end - g.p.Sim.Tick())
	msgs := int((left+time.Second)/iv) + 1
	st := g.r.newStream(request{grpc: true, resp: bytes, messages: msgs, interval: iv})
	g.r.streamsOpened++
	st.onMessage = func(st *stream, delay int64) {
		if !g.r.stopped {
			g.r.requests++
			g.r.hist.Record(time.Duration(delay))
		}
	}
	st.done = func(st *stream, ok bool) {
		if g.r.stopped {
			return
		}
		if g.r.streamEnds == nil {
			g.r.streamEnds = map[string]int64{}
		}
		if ok {
			g.r.streamEnds["completed"]++
			g.holdStream(cc)
			return
		}
		g.r.streamEnds["reset"]++
		g.r.errors++
		g.p.Sim.After(20*time.Millisecond, func() { g.holdStream(cc) })
	}
	cc.send(st)
}

func (g *grpcClient) stop() {
	g.r.stopped = true
	for _, cc := range g.ccs {
		cc.close()
	}
}

// clientConn is one grpc-go ClientConn: its subchannels' connections, and with round_robin the
// name they were resolved from.
type clientConn struct {
	p    *Pool
	r    *recorder
	rr   bool
	name model.Resolution
	subs []*grpcTransport
	next int
}

func newClientConn(p *Pool, r *recorder, roundRobin bool) *clientConn {
	cc := &clientConn{p: p, r: r, rr: roundRobin}
	if !roundRobin {
		cc.subs = []*grpcTransport{newGRPCTransport(p, r, nil, nil)}
		return cc
	}
	cc.name.Resolved(p.Sim.Now())
	for _, pod := range serving(p.gateway) {
		cc.subs = append(cc.subs, newGRPCTransport(p, r, pod, cc.resolveNow))
	}
	return cc
}

// resolveNow is grpc-go's answer to a lost connection (a GOAWAY included): resolve the name
// again, when the DNS resolver next may (model.Resolution).
func (cc *clientConn) resolveNow() {
	if at, ok := cc.name.Request(cc.p.Sim.Now()); ok && !cc.r.stopped {
		cc.p.Sim.After(at.Sub(cc.p.Sim.Now()), cc.resolved)
	}
}

// resolved takes the name's new answer, the serving pods: round_robin keeps a subchannel per
// address, so each pod new to it gets one (grpc-go endpointsharding's UpdateClientConnState).
// A pod that left keeps its subchannel here, which dials through the Service once its pod is
// gone (dialTier), as the lab's own model of a lost address has it.
func (cc *clientConn) resolved() {
	if cc.r.stopped {
		return
	}
	cc.name.Resolved(cc.p.Sim.Now())
	have := map[*Pod]bool{}
	for _, t := range cc.subs {
		have[t.pod] = true
	}
	for _, pod := range serving(cc.p.gateway) {
		if !have[pod] {
			cc.subs = append(cc.subs, newGRPCTransport(cc.p, cc.r, pod, cc.resolveNow))
		}
	}
}

// send picks a subchannel (pick_first: the one; round_robin: the next ready one in turn).
func (cc *clientConn) send(st *stream) {
	if !cc.rr || len(cc.subs) == 1 {
		cc.subs[0].send(st)
		return
	}
	for range cc.subs {
		t := cc.subs[cc.next%len(cc.subs)]
		cc.next++
		if t.cur != nil && t.cur.ready && !t.cur.gone {
			t.send(st)
			return
		}
	}
	cc.subs[cc.next%len(cc.subs)].send(st)
}

func (cc *clientConn) close() {
	for _, t := range cc.subs {
		t.close()
	}
}

// grpcTransport is one subchannel: one connection at a time. Streams over its cap queue (grpc-go
// http2_client.go NewStream waits for stream quota); after a GOAWAY new streams go to a new
// connection the subchannel dials, while the old one keeps its streams until they end
// (handleGoAway); a connection that closes is dialled again.
type grpcTransport struct {
	p        *Pool
	r        *recorder
	pod      *Pod   // round_robin: the pod's own address
	lost     func() // its ClientConn's resolveNow, called on a GOAWAY or a close (nil: pick_first)
	cur      *conn
	old      []*conn
	queue    []*stream
	dialling bool
}

func newGRPCTransport(p *Pool, r *recorder, pod *Pod, lost func()) *grpcTransport {
	t := &grpcTransport{p: p, r: r, pod: pod, lost: lost}
	t.redial()
	return t
}

func (t *grpcTransport) redial() {
	if t.r.stopped {
		return
	}
	t.dialling = true
	c := t.p.dial(t, t.pod)
	t.r.connOpened(c)
}

func (t *grpcTransport) send(st *stream) {
	t.queue = append(t.queue, st)
	t.drain()
}

// drain sends queued streams while the connection has room.
func (t *grpcTransport) drain() {
	c := t.cur
	for len(t.queue) > 0 && c != nil && c.ready && !c.goAway && !c.gone && uint32(c.inflight) < c.peerMax {
		st := t.queue[0]
		t.queue = t.queue[1:]
		done := st.done
		st.done = func(s *stream, ok bool) {
			if done != nil {
				done(s, ok)
			}
			t.drain()
		}
		c.send(st)
	}
}

func (t *grpcTransport) onReady(c *conn) {
	t.dialling = false
	t.cur = c
	t.drain()
}

func (t *grpcTransport) onGoAway(c *conn) {
	if c == t.cur {
		t.old = append(t.old, c)
		t.cur = nil
		t.connLost()
		t.redial()
	}
}

func (t *grpcTransport) connLost() {
	if t.lost != nil {
		t.lost()
	}
}

func (t *grpcTransport) onClosed(c *conn) {
	if c == t.cur {
		t.cur = nil
		t.connLost()
		if t.r.stopped {
			return
		}
		t.p.Sim.After(time.Millisecond, t.redial)
		return
	}
	for i, o := range t.old {
		if o == c {
			t.old = append(t.old[:i], t.old[i+1:]...)
			break
		}
	}
}

func (t *grpcTransport) close() {
	for _, c := range append([]*conn{t.cur}, t.old...) {
		if c != nil {
			c.goAway = true
			c.clientClose()
		}
	}
	t.queue = nil
}
