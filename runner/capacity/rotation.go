package capacity

import (
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// Rotation is the arithmetic that bounds what connection rotation can buy a client that has
// one connection taking new requests at a time (02-trigger's shared transport).
//
// Envoy decides to drain a connection when its worker decodes the request that reaches
// max_requests_per_connection (ConnectionManagerImpl::ActiveStream::decodeHeaders calls
// startDrainSequence), or when max_connection_duration's timer fires
// (ConnectionManagerImpl::onConnectionDurationTimeout); the client then sends its new requests
// on a fresh connection that the L4 balancer places afresh. A worker that serves mu requests a
// second and is offered R > mu on one connection falls behind by (R/mu - 1) seconds of work for
// every second the connection lives; once the client moves on, that queue drains on its own
// while the next connection starts on another worker with none. So the latency a rotated
// connection adds stays within the SLO's limit S while
//
//	life x (R/mu - 1) <= S,  life = min(N/mu, D)  =>  R <= mu x (1 + S/life)
//
// (N/mu: the worker decodes request N that long after the connection started when it is busy
// throughout). This is a ceiling: it leaves out the latency a request has with no queue, the
// new connection that lands on the worker still draining the last one, and what a fresh
// connection costs; and it can never pass the pool's workers x mu.
type Rotation struct {
	WorkerRPS              float64 `json:"worker_rps"` // mu: one worker's throughput, measured by the curve without the knobs
	RequestsPerConnection  uint32  `json:"max_requests_per_connection,omitempty"`
	MaxConnectionDurationS float64 `json:"max_connection_duration_s,omitempty"`
	LifeS                  float64 `json:"connection_life_s"`
	CeilingRPS             float64 `json:"ceiling_rps"`
	CeilingRatio           float64 `json:"ceiling_ratio"` // the ceiling over the capacity without the knobs
	Text                   string  `json:"text"`
}

// rotation works the arithmetic out for a search, or returns nil where it does not apply: the
// knobs set no rotation, the scenario rotates already, its client can have more than one
// connection taking requests, or no worker was measured saturated by one connection.
func rotation(c *Capacity, base *stacks.Scenario, set stacks.Knobs, workers int) *Rotation {
	n, d := rotates(set)
	if n == 0 && d == 0 || len(c.Curves) < 2 || !oneConnection(base.WithKnobs(set)) {
		return nil
	}
	if bn, bd := rotates(base.Knobs); bn != 0 || bd != 0 {
		return nil
	}
	if bn, bd := rotates(base.Local.Knobs); bn != 0 || bd != 0 {
		return nil
	}
	without, with := c.Curves[0], c.Curves[1]
	mu := 0.0
	for _, st := range without.Steps {
		// One connection (at most one open at any sample) on a worker busy over the whole run:
		// what it served is that worker's throughput.
		if st.Status == analysis.StatusOK && st.BusyMeasured && st.Busy >= saturatedBusy && st.ConcurrentConnections <= 1 {
			mu = max(mu, st.Achieved)
		}
	}
	if mu == 0 || without.Capacity == 0 {
		return nil
	}
	r := &Rotation{WorkerRPS: mu, RequestsPerConnection: n, MaxConnectionDurationS: d.Seconds()}
	life := time.Duration(0)
	if n > 0 {
		life = time.Duration(float64(n) / mu * float64(time.Second))
	}
	if d > 0 && (life == 0 || d < life) {
		life = d
	}
	r.LifeS = life.Seconds()
	s := c.SLO.Limit.Seconds()
	r.CeilingRPS = min(mu*(1+s/r.LifeS), float64(workers)*mu)
	r.CeilingRatio = r.CeilingRPS / without.Capacity
	r.Text = fmt.Sprintf("Rotation arithmetic: one worker served %.0f rps in the curve without the knobs (mu). A connection the gateway drains %s lives %.2f s on its worker, "+
		"whose queue grows by (R/mu - 1) s for each second of that life and drains on its own once the client moves on; so the queue stays within the SLO's %s while R <= mu x (1 + %s/life) = %.0f rps, %.2fx the capacity without the knobs. "+
		"That is the most rotation can buy a client with one connection taking requests at a time (one shared HTTP/2 transport under the stream cap); the search found %.0f rps (%.0f%% of the ceiling). "+
		"The ceiling rises as the connection's life shrinks against the SLO: a worker that serves more requests a second, a smaller N or a shorter duration, or a longer SLO.",
		mu, lifeReason(n, d, life), r.LifeS, fmtMs(c.SLO.Limit), fmtMs(c.SLO.Limit), r.CeilingRPS, r.CeilingRatio, with.Capacity, 100*with.Capacity/r.CeilingRPS)
	return r
}

// oneConnection says the scenario's client sends every new request on one connection: a
// client that dials only at the stream cap (stacks.Client.DialsAtCap), whose streams all fit
// under it. Unset, the cap is Envoy's default:
// 2147483647 up to Envoy 1.35, 1024 from 1.36.
func oneConnection(sc *stacks.Scenario) bool {
	if !sc.Client.DialsAtCap() || sc.Client.Slow != nil {
		return false
	}
	streams := max(sc.Client.Concurrency, sc.Local.Client.Concurrency)
	for _, k := range []stacks.Knobs{sc.Knobs, sc.Local.Knobs} {
		if h := k.HCM.HTTP2; h != nil && h.MaxConcurrentStreams != nil && int64(*h.MaxConcurrentStreams) < int64(streams) {
			return false
		}
	}
	return streams <= 1024
}

// rotates is what of k rotates connections: max_requests_per_connection and
// max_connection_duration (0: not set, or Envoy's 0 that turns it off).
func rotates(k stacks.Knobs) (uint32, time.Duration) {
	c := k.HCM.Common
	if c == nil {
		return 0, 0
	}
	var n uint32
	var d time.Duration
	if c.MaxRequestsPerConnection != nil {
		n = *c.MaxRequestsPerConnection
	}
	if c.MaxConnectionDuration != nil {
		d = c.MaxConnectionDuration.D()
	}
	return n, d
}

// lifeReason says which knob ends the connection's life first.
func lifeReason(n uint32, d, life time.Duration) string {
	if n > 0 && (d == 0 || life < d) {
		return fmt.Sprintf("after max_requests_per_connection=%d requests (N), the last of which its busy worker decodes N/mu after the connection opened,", n)
	}
	return fmt.Sprintf("after max_connection_duration=%s", stacks.Duration(d))
}
