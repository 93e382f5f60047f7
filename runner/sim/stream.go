package sim

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// request is what a client asks for, as the backends answer it: go-httpbin's paths (/get, a body
// of /bytes/N, a wait of /delay/S, an event stream of /sse, an upload to /upload) and the gRPC
// backend's calls (a unary call answered with a 1 KiB payload, a server stream of messages).
type request struct {
	grpc  bool
	body  int64         // request body bytes
	resp  int64         // response body bytes (of each message, for a stream)
	delay time.Duration // the backend's own wait before it answers
	// A long-lived stream: messages of resp bytes, every interval, count of them (0: until the
	// client ends it).
	messages int
	interval time.Duration
	slow     bool // h2dial's slow workers, reported apart
}

// httpbinGet is the size of go-httpbin's /get answer to the lab's clients (its JSON echo of the
// request's headers and address).
const httpbinGet = 350

// grpcPayload is the gRPC backend's unary answer (grpclab UnaryCall: a 1 KiB payload).
const grpcPayload = 1024

// parsePath reads a go-httpbin path as the backend answers it.
func parsePath(path string) request {
	u, _ := url.Parse(path)
	p := path
	if u != nil {
		p = u.Path
	}
	switch {
	case strings.HasPrefix(p, "/bytes/"):
		n, _ := strconv.ParseInt(strings.TrimPrefix(p, "/bytes/"), 10, 64)
		return request{resp: n}
	case strings.HasPrefix(p, "/delay/"):
		s, _ := strconv.ParseFloat(strings.TrimPrefix(p, "/delay/"), 64)
		return request{resp: httpbinGet, delay: time.Duration(s * float64(time.Second))}
	case strings.HasPrefix(p, "/sse"):
		// go-httpbin /sse: count events spread evenly over duration.
		count, dur := 10, 10*time.Second
		if u != nil {
			if v, err := strconv.Atoi(u.Query().Get("count")); err == nil && v > 0 {
				count = v
			}
			if v, err := time.ParseDuration(u.Query().Get("duration")); err == nil && v > 0 {
				dur = v
			}
		}
		return request{resp: sseEvent, messages: count, interval: dur / time.Duration(count)}
	}
	return request{resp: httpbinGet}
}

// sseEvent is one go-httpbin /sse event ("id: n\ndata: {...}\n\n").
const sseEvent = 72

// stream is one request/response exchange on a connection.
type stream struct {
	c   *conn
	req request
	// client times: sent, and due (an open-loop client's schedule; sent otherwise)
	sent, due int64
	// the gateway's: when it began the stream, and when the request's body is all in
	begun, bodyDone int64
	atLimit         bool
	ended           bool // the gateway's stream is done
	reset           bool
	sentMsgs        int
	item, resp      model.Item
	// done runs at the client when the stream ends: ok with a status, or failed (reset,
	// refused, connection gone).
	done func(st *stream, ok bool)
	// onMessage runs at the client for each message of a long-lived stream (its delay from when
	// the backend sent it).
	onMessage func(st *stream, delay int64)
	finished  bool // the client has seen the end
	// headersSent: the response has begun (its HEADERS went out)
	headersSent bool
}

// send is the client putting a new stream on the connection; it reaches the gateway half a round
// trip later.
func (c *conn) send(st *stream) {
	st.c = c
	st.sent = c.p.Sim.Tick()
	c.inflight++
	c.streams[st] = struct{}{}
	if c.use != nil {
		c.use.open(st)
	}
	leaves := st.sent
	if m := c.p.machine; m != nil && !c.unbounded {
		hops := 0
		if c.cfg != nil && c.cfg.Waypoint && !st.req.grpc {
			hops = 1
		}
		leaves = c.p.Sim.TickOf(m.book(c.p.Sim.Now(), m.cost(st.req, hops)))
	}
	c.p.Sim.At(leaves+c.ow, st.arrive)
}

// arrive is the request's HEADERS at the gateway: admitted under the stream cap (model.AdmitStream;
// every client the lab runs keeps within the cap it was told, so the cap acknowledged is the
// advertised one), counted, and booked on the connection's worker for its service time and
// filters (model.Cost.Request).
func (st *stream) arrive() {
	c := st.c
	if c.closed {
		return // the close already on its way to the client fails it
	}
	p, h := c.p, c.pod.hcm
	switch model.AdmitStream(uint32(c.open), c.cfg.MaxConcurrentStreams, c.cfg.MaxConcurrentStreams) {
	case model.ConnError:
		h.ProtocolErrors.Inc()
		c.closeByUs("stream over the acknowledged cap")
		return
	case model.Refuse:
		h.Refused.Inc()
		c.toClient(func() { st.fail() })
		return
	}
	c.open++
	c.requests++
	h.RqTotal.Inc()
	h.RqHTTP2.Inc()
	h.RqActive.Inc()
	h.RxBytes.Add(st.req.body + 64)
	st.begun = p.Sim.Tick()
	st.bodyDone = st.begun + c.uploadTime(st.req.body)
	st.atLimit = model.AtRequestLimit(c.requests, c.cfg.MaxRequestsPerConn)
	if deadline, ok := model.StreamDeadline(p.Sim.Now(), c.cfg); ok {
		p.Sim.At(p.Sim.TickOf(deadline), st.maxDuration)
	}
	cost := p.cfg.Cost.Request(c.cfg, c.pod.role == roleGateway, p.cfg.JWTVerify)
	if n := st.req.body; n > 0 {
		// The request's DATA frames after its first (16 KiB each) cost the worker a frame each.
		cost += time.Duration((n-1)/(16<<10)) * p.cfg.Cost.RequestData(false)
	}
	c.book(&st.item, cost, st.served)
	if st.atLimit {
		// The worker counts the request and starts the drain as it takes it up.
		p.Sim.At(p.Sim.TickOf(st.item.Start), func() {
			if !c.closed {
				h.MaxRequestsReached.Inc()
				c.startDrain("max_requests_per_connection")
			}
		})
	}
}

// served is the worker done with the request's headers and filters: it goes upstream, and its
// answer comes back after the backend's time and the upstream round trip.
func (st *stream) served() {
	c := st.c
	if c.closed || st.reset {
		return
	}
	p := c.p
	cl := c.pod.cluster(st.req.grpc)
	cl.RqTotal.Inc()
	cl.RqActive.Inc()
	// The backend answers an upload once it has read the body (go-httpbin reads it all).
	wait := max(st.bodyDone-p.Sim.Tick(), 0) + int64(p.cfg.Backend) + int64(p.cfg.UpstreamRTT) + int64(st.req.delay)
	if c.pod.role == roleGateway && c.cfg.Waypoint && !st.req.grpc && len(p.waypoints) > 0 {
		p.viaWaypoint(c.w, st, func() { st.answered(cl) })
		return
	}
	p.Sim.At(p.Sim.Tick()+wait, func() { st.answered(cl) })
}

// answered is the upstream's response at the gateway: its headers and first bytes, then for a
// long-lived stream each later message as the backend sends it.
func (st *stream) answered(cl *model.ClusterStats) {
	c := st.c
	cl.RqActive.Dec()
	cl.Rq2xx.Inc()
	cl.RxBytes.Add(st.req.resp)
	if c.closed || st.reset {
		return
	}
	st.forward(0)
	if st.req.messages > 1 {
		st.next(cl)
	}
}

// next schedules a long-lived stream's next message.
func (st *stream) next(cl *model.ClusterStats) {
	st.c.p.Sim.After(st.req.interval, func() {
		if st.c.closed || st.reset || st.ended {
			return
		}
		cl.RxBytes.Add(st.req.resp)
		st.forward(st.sentMsgs)
		if st.req.messages == 0 || st.sentMsgs+1 < st.req.messages {
			st.next(cl)
		}
	})
}

// forward is the worker proxying a message downstream: its bytes (model.Cost.Body), and for a
// message after the first, the read it arrives in (model.Cost.ResponseRead); then the bytes go
// to the connection's write buffer.
func (st *stream) forward(msg int) {
	c := st.c
	p := c.p
	sentAt := p.Sim.Tick()
	cost := p.cfg.Cost.Body(st.req.resp)
	if msg > 0 {
		cost += p.cfg.Cost.ResponseRead(msg, st.req.interval)
	}
	var it *model.Item = &st.resp
	if msg > 0 {
		it = &model.Item{}
	}
	c.book(it, cost, func() { st.write(msg, sentAt) })
}

// chunk is how much of a body Envoy's router forwards per upstream read here (the emulator's
// copy buffer): each is a write the buffer limit may pause.
const chunk = 16 << 10

// write puts a message's bytes on the connection and, with the last, ends the stream. The
// connection manager encodes the response headers with the first (ActiveStream::encodeHeaders:
// chargeStats, and a draining listener's drain notice); a write that finds the connection's
// buffer over its high watermark pauses the upstream until it is below the low one
// (upstream_flow_control_paused_reading_total).
func (st *stream) write(msg int, sentAt int64) {
	c := st.c
	if c.closed || st.reset {
		return
	}
	p, h := c.p, c.pod.hcm
	if msg == 0 {
		st.headersSent = true
		h.Charge(200)
		c.drainForListener()
	}
	cl := c.pod.cluster(st.req.grpc)
	left := st.req.resp
	var last int64
	// step writes the message's chunks; force writes the first at once (a writer woken at the
	// low watermark writes the chunk it waited with, as the emulator's writeData does).
	var step func(force bool)
	step = func(force bool) {
		if c.closed || st.reset {
			return
		}
		for left > 0 {
			n := min(left, chunk)
			if !force && c.queued() > c.cfg.HighWatermark() {
				cl.PausedReading.Inc()
				cl.ResumedReading.Inc()
				c.block(blocked{cl: cl, n: n, resume: func() { step(true) }})
				return
			}
			force = false
			left -= n
			last = c.put(n)
		}
		h.TxBytes.Add(st.req.resp)
		if msg == 0 && st.req.resp == 0 {
			last = c.put(0)
		}
		end := st.req.messages <= 1 || msg+1 == st.req.messages
		st.sentMsgs = msg + 1
		arrive := last + c.ow
		if st.onMessage != nil {
			p.Sim.At(arrive, func() { st.onMessage(st, arrive-sentAt) })
		}
		if end {
			st.end(arrive)
		}
	}
	step(false)
}

// end is the gateway's stream done (its last byte written): counted, and a draining connection
// with nothing left open closed. The client sees the end at arrive.
func (st *stream) end(arrive int64) {
	c := st.c
	if st.ended {
		return
	}
	st.ended = true
	h := c.pod.hcm
	h.RqActive.Dec()
	h.RqTime.Observe(float64(c.p.Sim.Tick()-st.begun) / float64(time.Millisecond))
	c.open--
	c.p.Sim.At(arrive, func() { st.finish(true) })
	if c.open == 0 && c.drain.ClosesWhenIdle() {
		c.closeAfterFlush()
	}
}

// maxDuration is max_stream_duration reached (ActiveStream::onStreamMaxDurationReached): counted,
// and the stream ended: by the local reply model.DurationReply gives before the response began
// (a failed call at the client: 504, 408, or gRPC's DEADLINE_EXCEEDED), reset after. The
// connection stays open.
func (st *stream) maxDuration() {
	c := st.c
	if st.ended || st.reset || c.closed {
		return
	}
	h := c.pod.hcm
	h.RqMaxDuration.Inc()
	if st.headersSent {
		st.resetByUs()
		return
	}
	status, _ := model.DurationReply(c.p.Sim.Tick() >= st.bodyDone, st.req.grpc)
	st.reset, st.ended = true, true // the upstream's answer, if it comes, is dropped
	h.Charge(status)
	h.RqActive.Dec()
	h.RqTime.Observe(float64(c.p.Sim.Tick()-st.begun) / float64(time.Millisecond))
	c.open--
	c.toClient(func() { st.finish(false) })
	if c.open == 0 && c.drain.ClosesWhenIdle() {
		c.closeAfterFlush()
	}
}

// resetByUs is the gateway resetting one stream.
func (st *stream) resetByUs() {
	c := st.c
	st.reset, st.ended = true, true
	h := c.pod.hcm
	h.RqActive.Dec()
	h.RqTxReset.Inc()
	c.open--
	c.toClient(func() { st.finish(false) })
	if c.open == 0 && c.drain.ClosesWhenIdle() {
		c.closeAfterFlush()
	}
}

// fail is the stream failing at the client (refused, or its connection gone).
func (st *stream) fail() { st.finish(false) }

// finish is the client seeing the stream end.
func (st *stream) finish(ok bool) {
	if st.finished {
		return
	}
	st.finished = true
	c := st.c
	c.inflight--
	delete(c.streams, st)
	if ok {
		c.served++
	}
	if c.use != nil {
		c.use.close(st)
	}
	if st.done != nil {
		st.done(st, ok)
	}
	c.closeIfIdle()
}

// uploadTime is how long a request body of n bytes takes to reach the gateway after its
// headers: the client may send a stream window's worth (initial_stream_window_size, the
// gateway's receive window) and then waits for the gateway's WINDOW_UPDATE, a round trip, for
// each window after the first, so a stream uploads at most a window per round trip. At
// loopback's round trip that bound is no bound.
func (c *conn) uploadTime(n int64) int64 {
	w := int64(c.cfg.StreamWindow)
	if n <= 0 || w <= 0 {
		return 0
	}
	rounds := (n+w-1)/w - 1
	return rounds * 2 * c.ow
}
