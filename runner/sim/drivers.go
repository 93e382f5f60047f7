package sim

import (
	"time"

	"github.com/igwlab/igwlab/runner/load"
)

// client is a running client model.
type client interface {
	start()
	stop() // the window ended: no new request, every connection closed
	recorder() *recorder
}

// newClient builds the model of spec's client.
func (p *Pool) newClient(s load.Spec, r *recorder) client {
	switch s.Kind {
	case "fortio":
		return &fortio{p: p, s: s, r: r}
	case "grpc":
		return &grpcClient{p: p, s: s, r: r}
	}
	return &h2dialClient{p: p, s: s, r: r}
}

// h2dial: workers sending one request at a time (closed loop), or taking requests due at a
// constant rate (open loop, latency from the due time), over one x/net http2.Transport shared by
// every worker (shared: h2dial/h2dial.go, one transport; it dials at the server's stream cap) or
// one each (distinct). Slow workers share the shared transport and are reported apart; the
// long-stream mode holds one stream per worker and opens the next as one ends.
type h2dialClient struct {
	p       *Pool
	s       load.Spec
	r       *recorder
	shared  *transport
	workers []*transport
	idle    []int // open loop: workers free to take a due request
	due     []int64
	next    int64 // open loop: the next due time
}

func (h *h2dialClient) recorder() *recorder { return h.r }

func (h *h2dialClient) newTransport() *transport {
	return &transport{p: h.p, dial: func(t *transport) *conn { return h.p.dial(t, nil) }, onConn: h.r.connOpened,
		assumed: xnetInitialMaxConcurrentStreams}
}

func (h *h2dialClient) req() request {
	q := parsePath(h.s.Path)
	if h.s.BodyBytes > 0 {
		q.body = int64(h.s.BodyBytes)
		q.resp = 64 // go-httpbin's answer to an upload
	}
	if h.s.LongStream && q.messages == 0 {
		q.messages, q.interval = 1<<30, time.Second // any other body: read as it comes
	}
	return q
}

func (h *h2dialClient) start() {
	if h.s.Mode != "distinct" {
		h.shared = h.newTransport()
		h.shared.primed = true
	}
	h.r.longStreams = h.s.LongStream
	for range h.s.Concurrency {
		t := h.shared
		if t == nil {
			t = h.newTransport()
		}
		h.workers = append(h.workers, t)
	}
	if h.s.QPS > 0 {
		h.r.offered = h.s.QPS
		h.next = h.p.Sim.Tick()
		for i := range h.workers {
			h.idle = append(h.idle, i)
		}
		h.pace()
	} else {
		for i := range h.workers {
			h.issue(i, h.p.Sim.Tick())
		}
	}
	if h.s.SlowPath != "" {
		slow := parsePath(h.s.SlowPath)
		slow.slow = true
		h.r.slowURL, h.r.slowWorkers = h.s.SlowPath, h.s.SlowWorkers
		for range h.s.SlowWorkers {
			h.slowLoop(slow)
		}
	}
}

// issue sends worker i's next request, due at due.
func (h *h2dialClient) issue(i int, due int64) {
	if h.r.stopped {
		return
	}
	st := h.r.newStream(h.req())
	st.due = due
	if h.s.LongStream {
		h.r.streamsOpened++
		st.onMessage = func(st *stream, delay int64) {
			if !h.r.stopped {
				h.r.requests++
				h.r.hist.Record(time.Duration(delay))
			}
		}
	}
	st.done = func(st *stream, ok bool) {
		if h.s.LongStream {
			h.streamEnded(ok)
		} else {
			h.r.record(ok, false, st.due)
		}
		h.free(i)
	}
	h.workers[i].roundTrip(st)
}

func (h *h2dialClient) streamEnded(ok bool) {
	if h.r.stopped {
		return
	}
	if h.r.streamEnds == nil {
		h.r.streamEnds = map[string]int64{}
	}
	if ok {
		h.r.streamEnds["completed"]++
	} else {
		h.r.streamEnds["reset"]++
	}
}

// free is worker i done with a request: the next, at once (closed loop) or the next due one.
func (h *h2dialClient) free(i int) {
	if h.s.QPS <= 0 {
		h.issue(i, h.p.Sim.Tick())
		return
	}
	if len(h.due) > 0 {
		d := h.due[0]
		h.due = h.due[1:]
		h.r.lag.Record(time.Duration(h.p.Sim.Tick() - d))
		h.issue(i, d)
		return
	}
	h.idle = append(h.idle, i)
}

// pace emits the due times at the rate (h2dial pace): each goes to a free worker, or waits in a
// queue of four per worker; when that is full the pacer blocks, and the requests it never emits
// fall behind.
func (h *h2dialClient) pace() {
	if h.r.stopped {
		return
	}
	now := h.p.Sim.Tick()
	iv := interval(h.s.QPS)
	for h.next <= now && (len(h.idle) > 0 || len(h.due) < 4*len(h.workers)) {
		d := h.next
		h.next += iv
		if len(h.idle) > 0 {
			i := h.idle[0]
			h.idle = h.idle[1:]
			h.r.lag.Record(time.Duration(now - d))
			h.issue(i, d)
			continue
		}
		h.due = append(h.due, d)
	}
	h.p.Sim.At(max(h.next, now+int64(time.Millisecond)), h.pace)
}

func (h *h2dialClient) slowLoop(q request) {
	if h.r.stopped {
		return
	}
	st := h.r.newStream(q)
	st.done = func(st *stream, ok bool) {
		h.r.record(ok, true, st.sent)
		h.slowLoop(q)
	}
	h.shared.roundTrip(st)
}

func (h *h2dialClient) stop() {
	h.r.stopped = true
	for _, t := range h.uniqueTransports() {
		t.close()
	}
	h.r.unsent += int64(len(h.due))
}

func (h *h2dialClient) uniqueTransports() []*transport {
	if h.shared != nil {
		return []*transport{h.shared}
	}
	return h.workers
}

// fortio: -c threads, each its own Go HTTP/2 client (one connection, one request at a time),
// each running at qps/c (fortio periodic.go: the i-th call of a thread is due at start + i x
// c/qps, and a thread behind its schedule catches up without sleeping), latency timed from the
// send; -qps 0 runs each thread as fast as it can.
type fortio struct {
	p       *Pool
	s       load.Spec
	r       *recorder
	threads []*transport
	t0      int64
	req     request // every call's: the path is the same
}

func (f *fortio) recorder() *recorder { return f.r }

func (f *fortio) start() {
	f.t0 = f.p.Sim.Tick()
	f.r.offered = f.s.QPS
	f.req = parsePath(f.s.Path)
	for i := range max(f.s.Concurrency, 1) {
		t := &transport{p: f.p, dial: func(t *transport) *conn { return f.p.dial(t, nil) }, onConn: f.r.connOpened,
			assumed: xnetInitialMaxConcurrentStreams}
		f.threads = append(f.threads, t)
		f.call(i, 0)
	}
}

// call runs thread i's n-th call at its due time.
func (f *fortio) call(i int, n int64) {
	if f.r.stopped {
		return
	}
	now := f.p.Sim.Tick()
	if f.s.QPS > 0 {
		due := f.t0 + n*interval(f.s.QPS/float64(len(f.threads)))
		if due > now {
			f.p.Sim.At(due, func() { f.call(i, n) })
			return
		}
	}
	st := f.r.newStream(f.req)
	st.done = func(st *stream, ok bool) {
		f.r.record(ok, false, st.sent)
		f.call(i, n+1)
	}
	f.threads[i].roundTrip(st)
}

func (f *fortio) stop() {
	f.r.stopped = true
	for _, t := range f.threads {
		t.close()
	}
}
