// Package sim is the gateway pool as a discrete-event simulation in virtual time: the same
// pods, workers, listener and L4 balancer as the socket emulator, the same rules (runner/model)
// deciding every booking, pick, admission, rotation and drain, but no sockets and no HTTP/2
// codec: connections and streams are records, and the clients are models of the libraries the
// lab runs (x/net's http2.Transport, fortio, grpc-go), each rule cited to its source. Nothing
// waits on the wall clock, so a pool a hundred times the local one runs a minute of traffic in
// seconds.
package sim

import "time"

// Sim is the event loop and its virtual clock. Events at the same time run in the order they
// were scheduled. It is not safe for concurrent use: everything runs on the goroutine that
// calls Run.
type Sim struct {
	base time.Time // virtual time zero
	t    int64     // now, in ns since base
	q    evHeap
	seq  uint64
	// Events counts the events run (for the benchmark's rate).
	Events uint64
}

type event struct {
	at  int64
	seq uint64
	f   func()
}

// evHeap is a 4-ary min-heap of events by (at, seq), written out rather than through
// container/heap so that pushing an event does not box it; four children a node halve the
// heap's depth, and elements move into a hole instead of being swapped (the loop's hottest code).
type evHeap []event

func (e *event) before(o *event) bool { return e.at < o.at || e.at == o.at && e.seq < o.seq }

func (h *evHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if !e.before(&q[parent]) {
			break
		}
		q[i] = q[parent]
		i = parent
	}
	q[i] = e
}

func (h *evHeap) pop() event {
	q := *h
	top := q[0]
	last := len(q) - 1
	e := q[last]
	q[last] = event{}
	q = q[:last]
	n := len(q)
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			small := c
			for k := c + 1; k < c+4 && k < n; k++ {
				if q[k].before(&q[small]) {
					small = k
				}
			}
			if !q[small].before(&e) {
				break
			}
			q[i] = q[small]
			i = small
		}
		q[i] = e
	}
	*h = q
	return top
}

// NewSim starts a clock at base.
func NewSim(base time.Time) *Sim { return &Sim{base: base} }

// Now is the virtual time.
func (s *Sim) Now() time.Time { return s.base.Add(time.Duration(s.t)) }

// Tick is the virtual time in ns since the start.
func (s *Sim) Tick() int64 { return s.t }

// TimeOf is a tick as a time.
func (s *Sim) TimeOf(t int64) time.Time { return s.base.Add(time.Duration(t)) }

// TickOf is a time as a tick.
func (s *Sim) TickOf(t time.Time) int64 { return int64(t.Sub(s.base)) }

// At runs f at tick t (now, if t is past).
func (s *Sim) At(t int64, f func()) {
	if t < s.t {
		t = s.t
	}
	s.seq++
	s.q.push(event{at: t, seq: s.seq, f: f})
}

// After runs f d from now.
func (s *Sim) After(d time.Duration, f func()) { s.At(s.t+int64(d), f) }

// RunUntil runs every event due by tick t, then sets the clock to t. stop, when not nil, is
// asked between events and ends the run early (Ctrl-C): the clock stays where it got to.
func (s *Sim) RunUntil(t int64, stop func() bool) {
	n := 0
	for len(s.q) > 0 && s.q[0].at <= t {
		if n++; n&0xfff == 0 && stop != nil && stop() {
			return
		}
		e := s.q.pop()
		s.t = e.at
		s.Events++
		e.f()
	}
	if t > s.t {
		s.t = t
	}
}

// Pending is how many events are scheduled.
func (s *Sim) Pending() int { return len(s.q) }
