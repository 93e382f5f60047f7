package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/load"
)

// The clients the lab runs, as models of what their libraries do with connections: when they
// dial, what they do at a stream cap, after a GOAWAY and when a connection closes. Each keeps
// the record its real counterpart reports (load.Result).

// ClientKinds are the clients the simulator models, by load.Spec Kind and Mode.
var ClientKinds = map[string][]string{
	"h2dial": {"shared", "distinct"},
	"fortio": {""},
	"grpc":   {"unary", "server-stream", "bidi"},
}

// CheckSpec refuses a client the simulator has no model of, or one too large to hold.
func CheckSpec(s load.Spec) error {
	modes, ok := ClientKinds[s.Kind]
	if !ok {
		return fmt.Errorf("client.kind %q: the simulated target has a model of h2dial, fortio and grpc only", s.Kind)
	}
	mode := s.Mode
	if s.Kind == "grpc" && mode == "" {
		mode = "unary"
	}
	if s.Kind == "h2dial" && mode == "" {
		mode = "shared"
	}
	known := false
	for _, m := range modes {
		known = known || m == mode
	}
	if !known {
		return fmt.Errorf("client.mode %q: the simulated target models %s in modes %s", s.Mode, s.Kind, strings.Join(modes, ", "))
	}
	if s.Concurrency < 1 || s.Concurrency > MaxConnections {
		return fmt.Errorf("client.concurrency %d: allowed 1..%d on the simulated target (what it holds well under 2 GiB)", s.Concurrency, MaxConnections)
	}
	if s.Connections > MaxConnections {
		return fmt.Errorf("client.connections %d: allowed 0..%d on the simulated target (what it holds well under 2 GiB)", s.Connections, MaxConnections)
	}
	return nil
}

// recorder is what a client keeps of its run.
type recorder struct {
	p                        *Pool
	start, end               int64 // the window
	hist, slowHist, lag      h2dial.Histogram
	requests, errors         int64
	slowRequests, slowErrors int64
	unsent                   int64
	streamsOpened            int64
	streamEnds               map[string]int64
	conns                    []*conn
	stopped                  bool
	offered                  float64
	slowURL                  string
	slowWorkers              int
	longStreams              bool
	timedFromSend            bool
}

func (r *recorder) connOpened(c *conn) {
	r.conns = append(r.conns, c)
	if r.longStreams {
		c.use = &connUse{r: r, local: c.peer, opened: r.p.Sim.Tick(), spans: map[*stream]*useSpan{}}
	}
}

// record counts a request that ended at the client now: ok with its latency from from.
func (r *recorder) record(ok, slow bool, from int64) {
	if r.stopped {
		return
	}
	now := r.p.Sim.Tick()
	switch {
	case slow && ok:
		r.slowRequests++
		r.slowHist.Record(time.Duration(now - from))
	case slow:
		r.slowErrors++
	case ok:
		r.requests++
		r.hist.Record(time.Duration(now - from))
	default:
		r.errors++
	}
}

// result is the client's record as load.Result.
func (r *recorder) result(kind string) *load.Result {
	elapsed := time.Duration(r.end - r.start).Seconds()
	res := &load.Result{Client: kind, Requests: r.requests, Errors: r.errors, Latency: r.hist.Summary(),
		ConnectionsOpened: len(r.conns), OfferedRPS: r.offered, Unsent: r.unsent}
	if elapsed > 0 {
		res.RPS = float64(r.requests) / elapsed
	}
	if r.offered > 0 {
		res.SendLagP99 = float64(r.lag.Quantile(0.99)) / float64(time.Millisecond)
	}
	for _, c := range r.conns {
		res.PerConnection = append(res.PerConnection, c.served)
	}
	if r.slowWorkers > 0 {
		res.Slow = &h2dial.SlowResult{URL: r.slowURL, Workers: r.slowWorkers, Requests: r.slowRequests, Errors: r.slowErrors, Latency: r.slowHist.Summary()}
	}
	if r.errors > 0 {
		res.ErrorKinds = map[string]int64{"reset": r.errors}
	}
	if r.longStreams {
		res.StreamsOpened = r.streamsOpened
		res.StreamEnds = r.streamEnds
		for _, c := range r.conns {
			if c.use != nil {
				res.Conns = append(res.Conns, c.use.record(r.end))
			}
		}
	}
	res.Text = fmt.Sprintf("simulated %s: %d requests, %d errors, %.0f rps, %d connections, p50 %.1f ms, p99 %.1f ms\n",
		kind, res.Requests, res.Errors, res.RPS, res.ConnectionsOpened, res.Latency.P50, res.Latency.P99)
	res.Native = res
	return res
}

// connUse is a long-stream client's record of one connection: the streams it carried, each
// from when it opened to when it ended, or still open at the window's end.
type connUse struct {
	r      *recorder
	local  string
	opened int64
	spans  map[*stream]*useSpan
	order  []*stream
}

type useSpan struct {
	start, end int64
	ended      bool
}

func (u *connUse) open(st *stream) {
	u.spans[st] = &useSpan{start: u.r.p.Sim.Tick()}
	u.order = append(u.order, st)
}

func (u *connUse) close(st *stream) {
	if sp := u.spans[st]; sp != nil && !u.r.stopped {
		sp.end, sp.ended = u.r.p.Sim.Tick(), true
	}
}

// record is the connection as h2dial and the gRPC client report it (h2dial.ConnUse).
func (u *connUse) record(end int64) h2dial.ConnUse {
	sec := func(t int64) float64 { return float64(t-u.r.start) / 1e9 }
	out := h2dial.ConnUse{Local: u.local, OpenedS: sec(u.opened)}
	for _, st := range u.order {
		sp := u.spans[st]
		if sp.ended {
			out.Streams = append(out.Streams, h2dial.Span{StartS: sec(sp.start), EndS: sec(sp.end)})
		} else {
			out.Streams = append(out.Streams, h2dial.Span{StartS: sec(sp.start), EndS: sec(end), Open: true})
		}
	}
	return out
}

// newStream is a stream of the client's request.
func (r *recorder) newStream(req request) *stream { return &stream{req: req} }

// interval is the time between requests at a rate.
func interval(rate float64) int64 {
	if rate <= 0 {
		return 0
	}
	return int64(math.Round(1e9 / rate))
}
