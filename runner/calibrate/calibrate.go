// Package calibrate holds the simulated target to the local one: the same scenarios with the
// same seed on both, every call compared, and the numbers behind the calls compared within
// stated tolerances. Where a number may differ, the rule says why (the local target's laptop
// sets it, or chance placed a rotating client's connections differently).
package calibrate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// Tolerances the simulated target is held to, against the local target.
const (
	// BusyPoints is how far apart the hottest worker's busy share may be, in percentage points.
	BusyPoints = 10
	// P99Ratio is how far the simulated p99 may be from the local one, as a ratio (0.3: within
	// 30% either way), where a saturated worker's queue sets it.
	P99Ratio = 0.3
	// Saturated is the hottest worker's busy share from which its queue sets a scenario's p99;
	// below it the local target's p99 is its laptop's scheduling tail, which no model of the
	// pool predicts.
	Saturated = 0.9
	// RateApart is how far apart the two targets' rates may be (as a fraction) before an
	// unsaturated local worker's rate is taken as the laptop's rather than the pool's.
	RateApart = 0.1
	// Stalled is the busy share below which a saturated local worker shows that its closed-loop
	// client stopped sending for a while (it idled with hundreds of requests outstanding).
	Stalled = 0.99
)

// Row is one scenario on both targets.
type Row struct {
	Scenario string
	Calls    []string // the calls it feeds
	Local    *analysis.Result
	Sim      *analysis.Result
	// Deterministic: the client alone fixes its connections (no rotation, no pool events, no
	// dialing at a stream cap), so both targets must see as many.
	Deterministic bool
	// Workers is the workers per gateway pod the scenario ran with.
	Workers int
	// HarnessBound: the local run's rate was its machine's, not the pool's: the simulated rate
	// is about the same (within 10%), yet the local hottest worker stayed below saturation while the simulated one
	// ran BusyPoints or more hotter. The local target's workers are goroutines that share the
	// laptop's cores with the clients, so the hottest one is held back by its share of them; a
	// gateway's worker has its own core, as the simulated one does.
	HarnessBound bool
	// ClientQueued: the client queues its own calls at the gateway's stream cap (gRPC), so its
	// queue, not the gateway's, sets the tail.
	ClientQueued bool
	// Checks are the comparisons made, each passed or failed with its numbers; Skipped what was
	// not compared and why.
	Checks  []Check
	Skipped []string
}

// Check is one comparison.
type Check struct {
	What string
	OK   bool
	Text string
}

// Call is one call on both targets.
type Call struct {
	ID         string
	Local, Sim string
	// Why says why the verdicts may differ: a scenario feeding the call is harness-bound (see
	// Row.HarnessBound); "" when they must agree.
	Why string
}

// Report is a calibration's outcome.
type Report struct {
	Rows  []*Row
	Calls []Call
}

// Failures lists every comparison that failed, named by scenario or call.
func (r *Report) Failures() []string {
	var out []string
	for _, c := range r.Calls {
		if c.Local != c.Sim && c.Why == "" {
			out = append(out, fmt.Sprintf("%s: local %s, sim %s", c.ID, c.Local, c.Sim))
		}
	}
	for _, row := range r.Rows {
		for _, c := range row.Checks {
			if !c.OK {
				out = append(out, fmt.Sprintf("%s %s: %s", row.Scenario, c.What, c.Text))
			}
		}
	}
	return out
}

// Compare compares two runs of the same scenarios: local's and the simulator's.
func Compare(cat *stacks.Catalog, local, sim *suite.Summary) *Report {
	rep := &Report{}
	ids := map[string]bool{}
	for id := range local.Hypotheses {
		ids[id] = true
	}
	for id := range sim.Hypotheses {
		ids[id] = true
	}
	for _, id := range sorted(ids) {
		rep.Calls = append(rep.Calls, Call{ID: id, Local: local.Hypotheses[id].Verdict, Sim: sim.Hypotheses[id].Verdict})
	}
	for _, name := range local.Order {
		lab, ok := cat.Get(name)
		if !ok {
			continue
		}
		row := &Row{Scenario: name, Local: local.Scenarios[name], Sim: sim.Scenarios[name], Calls: feeds(lab)}
		sc := lab.WithLocal()
		row.Deterministic = Deterministic(sc)
		row.ClientQueued = ClientQueued(sc)
		row.Workers = max(1, local.Concurrency)
		if sc.Pool.Concurrency > 0 {
			row.Workers = sc.Pool.Concurrency
		}
		row.compare()
		rep.Rows = append(rep.Rows, row)
	}
	for i, c := range rep.Calls {
		for _, row := range rep.Rows {
			if row.HarnessBound && slices.Contains(row.Calls, c.ID) {
				rep.Calls[i].Why = fmt.Sprintf("fed by %s, whose hottest worker the local laptop held back", row.Scenario)
			}
		}
	}
	return rep
}

// feeds names the calls a scenario feeds.
func feeds(sc *stacks.Scenario) []string {
	var out []string
	for _, f := range sc.Feeds {
		out = append(out, f.Call)
	}
	return out
}

// Deterministic says whether a scenario's client alone fixes how many connections it opens:
// fortio's threads, h2dial's distinct workers, gRPC's ClientConns, and h2dial's shared
// transport when its streams fit under the stream cap; not where the gateway rotates
// connections (how many it drains depends on how fast the window's requests went), not where
// the pool changes under the load, and not a shared transport dialing at a stream cap (x/net
// counts a stream until its response is read, so how many it dials depends on timing).
func Deterministic(sc stacks.Scenario) bool {
	if len(sc.Events) > 0 || rotates(sc.Knobs) {
		return false
	}
	c := sc.Client
	if c.Kind == "h2dial" && c.Mode != "distinct" {
		mcs, _ := knob(sc.Knobs, "hcm.http2_protocol_options.max_concurrent_streams")
		streams := c.Concurrency
		if c.Slow != nil {
			streams += c.Slow.Workers
		}
		return mcs == 0 || mcs >= float64(streams)
	}
	return true
}

// sharedWorker says whether the pod with the most connections holds more of them than it has
// workers, so that some worker carries several.
func sharedWorker(r *analysis.Result, workers int) bool {
	var most float64
	for _, c := range r.Connections {
		most = max(most, c)
	}
	return most > float64(workers)
}

// hotRates is the requests a second the hottest worker served on each target, where a pod is
// one worker (its requests are then the pod's, which Envoy counts; a worker's share of its
// pod's requests is counted nowhere).
func hotRates(l, s *analysis.Result, workers int) (local, sim float64, ok bool) {
	if workers != 1 || l.WindowS <= 0 || s.WindowS <= 0 {
		return 0, 0, false
	}
	local, sim = l.RequestsPerPod[hotPod(l)]/l.WindowS, s.RequestsPerPod[hotPod(s)]/s.WindowS
	return local, sim, local > 0 && sim > 0
}

// hotPod is the pod of a result's hottest worker ("pod/worker_N").
func hotPod(r *analysis.Result) string {
	pod, _, _ := strings.Cut(r.HotWorker, "/")
	return pod
}

// ClientQueued says whether a gRPC client has more calls in flight than the stream cap lets its
// connections carry, so that calls wait in grpc-go for stream quota.
func ClientQueued(sc stacks.Scenario) bool {
	c := sc.Client
	if c.Kind != "grpc" {
		return false
	}
	mcs, ok := knob(sc.Knobs, "hcm.http2_protocol_options.max_concurrent_streams")
	return ok && mcs > 0 && mcs*float64(max(1, c.Connections)) < float64(c.Concurrency)
}

// rotates says whether a knob drains connections during the window.
func rotates(k stacks.Knobs) bool {
	for _, p := range []string{"hcm.common_http_protocol_options.max_requests_per_connection", "hcm.common_http_protocol_options.max_connection_duration"} {
		if v, ok := knob(k, p); ok && v > 0 {
			return true
		}
	}
	return false
}

// knob reads a knob in force as a number (seconds for a duration); ok is false when unset.
func knob(k stacks.Knobs, path string) (float64, bool) {
	for _, v := range k.Effective() {
		if v.Path != path {
			continue
		}
		var f float64
		if _, err := fmt.Sscanf(strings.TrimSuffix(v.Value, "s"), "%g", &f); err == nil {
			return f, true
		}
	}
	return 0, false
}

// compare makes the row's checks.
func (row *Row) compare() {
	l, s := row.Local, row.Sim
	switch {
	case l == nil || s == nil:
		row.Skipped = append(row.Skipped, "not run on both targets")
		return
	case l.Status != s.Status:
		row.check("status", false, fmt.Sprintf("local %s, sim %s", l.Status, s.Status))
		return
	case !l.OK():
		row.Skipped = append(row.Skipped, fmt.Sprintf("%s on both: %s", l.Status, l.Reason))
		return
	}
	if row.Deterministic {
		row.check("connections", l.ConnectionsTotal == s.ConnectionsTotal,
			fmt.Sprintf("local %.0f, sim %.0f", l.ConnectionsTotal, s.ConnectionsTotal))
	} else if l.ConnectionsTotal == s.ConnectionsTotal {
		row.check("connections", true, fmt.Sprintf("local %.0f, sim %.0f (not required: timing may move them)", l.ConnectionsTotal, s.ConnectionsTotal))
	} else {
		row.Skipped = append(row.Skipped, fmt.Sprintf("connections (local %.0f, sim %.0f): the gateway's rotation, the pool's events or dials at a stream cap decide them, and those move with timing", l.ConnectionsTotal, s.ConnectionsTotal))
	}
	chance := fmt.Sprintf("local %s (CV %.3f), sim %s (CV %.3f)", l.ChanceVerdict, l.CV, s.ChanceVerdict, s.CV)
	switch {
	case row.Deterministic || l.ChanceVerdict == s.ChanceVerdict:
		row.check("chance band", l.ChanceVerdict == s.ChanceVerdict, chance)
	default:
		// Rotation, events or dials at a cap make each target open its own connections, each
		// placed by its own draw: two draws of one distribution, which may fall either side of
		// a band's edge. The calls they feed are compared all the same.
		row.Skipped = append(row.Skipped, "chance band ("+chance+"): the targets opened different connections, two draws of the chance the band describes")
	}
	samePlace := row.Deterministic && samePlacement(l, s)
	switch {
	case !l.BusyMeasured || !s.BusyMeasured:
		row.Skipped = append(row.Skipped, "hottest worker: not measured")
	case !samePlace:
		row.Skipped = append(row.Skipped, fmt.Sprintf("hottest worker (local %.0f%%, sim %.0f%%): the connections landed on other pods or workers, so another worker is the hottest", 100*l.BusyMax, 100*s.BusyMax))
	case l.BusyMax < Saturated && l.RPS > 0 && s.RPS > 0 && math.Abs(s.RPS/l.RPS-1) <= RateApart && min(1, s.BusyMax*l.RPS/s.RPS)-l.BusyMax >= BusyPoints/100.0:
		// One way only: the laptop can hold the local worker back, never push it past the model.
		row.HarnessBound = true
		row.Skipped = append(row.Skipped, fmt.Sprintf("hottest worker (local %.0f%%, sim %.0f%% at about the same rate, %.0f rps locally): the laptop bound the local rate, and the local target's workers are goroutines sharing its two cores with the clients, so its hottest worker was held back by its share of them; a gateway's worker has its own core, as the simulated one does, so here the simulated target is the one that is Envoy, and the calls this scenario feeds may differ", 100*l.BusyMax, 100*s.BusyMax, l.RPS))
	case l.BusyMax < Saturated && l.RPS > 0 && s.RPS > 0 && math.Abs(s.RPS/l.RPS-1) > RateApart:
		// No saturated worker sets the rate, and the two rates are far apart: the local clients
		// ran at what the laptop let them (two cores shared with the pool), so how the load fell
		// over their connections, and the hottest worker's share of it, is the laptop's too.
		row.Skipped = append(row.Skipped, fmt.Sprintf("hottest worker (local %.0f%% at %.0f rps, sim %.0f%% at %.0f rps): no worker was saturated, so the local rate was the laptop's, %.0f%% off the simulated one, and the local clients' connections carried what the laptop let each of them", 100*l.BusyMax, l.RPS, 100*s.BusyMax, s.RPS, 100*math.Abs(s.RPS/l.RPS-1)))
	default:
		// A closed-loop client's rate on the local target is what its laptop sustains (the
		// harness), so the simulated share is taken at the local rate: what is compared is the
		// pool's cost per request on the hottest worker, not the two machines. Where a pod is one
		// worker, the rate taken is the hottest worker's own: below saturation the local clients'
		// connections go at what the laptop gives each, so the hottest worker's part of the
		// total is the laptop's too (one calibration of 06-waypoint-baseline had the local
		// hottest worker 64% busy at a total rate 7% under the simulated one, whose hottest
		// worker was 55%).
		busy, at := s.BusyMax, ""
		if lh, sh, ok := hotRates(l, s, row.Workers); ok && math.Abs(sh/lh-1) > 0.02 {
			busy = min(1, s.BusyMax*lh/sh)
			at = fmt.Sprintf(" at the local hottest worker's rate (%.0f%% at %.0f rps on it, local %.0f rps)", 100*s.BusyMax, sh, lh)
		} else if !ok && l.RPS > 0 && s.RPS > 0 && math.Abs(s.RPS/l.RPS-1) > 0.02 {
			busy = min(1, s.BusyMax*l.RPS/s.RPS)
			at = fmt.Sprintf(" at the local rate (%.0f%% at %.0f rps, local %.0f rps)", 100*s.BusyMax, s.RPS, l.RPS)
		}
		d := 100 * math.Abs(l.BusyMax-busy)
		row.check("hottest worker", d <= BusyPoints, fmt.Sprintf("local %.0f%%, sim %.0f%%%s busy (%.0f points)", 100*l.BusyMax, 100*busy, at, d))
	}
	switch {
	case l.P99Ms <= 0 || s.P99Ms <= 0:
		row.Skipped = append(row.Skipped, "p99: no latency measured")
	case l.BusyMax < Saturated || !samePlace:
		row.Skipped = append(row.Skipped, fmt.Sprintf("p99 (local %.1f ms, sim %.1f ms): no saturated worker's queue sets it on the same placement", l.P99Ms, s.P99Ms))
	case l.BusyMax < Stalled:
		row.Skipped = append(row.Skipped, fmt.Sprintf("p99 (local %.1f ms, sim %.1f ms): the local worker idled %.0f%% of the window with its client's requests outstanding, so the local harness (the clients and the pool on two cores, one Go runtime) stalled the client, and its stalls are in the local tail; the simulated tail is the worker's queue alone, as on a gateway whose clients run on their own machines", l.P99Ms, s.P99Ms, 100*(1-l.BusyMax)))
	case sharedWorker(l, row.Workers):
		row.Skipped = append(row.Skipped, fmt.Sprintf("p99 (local %.1f ms, sim %.1f ms): the saturated worker carries several connections, and Envoy dispatches each connection's read buffer at once (one read event, every frame in it: ConnectionImpl::onRead into the codec's dispatch), as the socket emulator does (h2conn.go), so a connection's burst waits as one; the simulator books each request as it arrives, so its tail is the fair queue's and shorter. Here the local target is Envoy's", l.P99Ms, s.P99Ms))
	case row.ClientQueued:
		row.Skipped = append(row.Skipped, fmt.Sprintf("p99 (local %.1f ms, sim %.1f ms): the client's own queue at the stream cap sets it, and grpc-go serves its waiters in no fixed order (http2_client.go NewStream: a call made while quota is free takes it ahead of the woken waiter); the simulator serves them in order, so its tail is the fair queue's", l.P99Ms, s.P99Ms))
	default:
		// Saturated and closed-loop, the queue's length is the client's concurrency, so the
		// tail scales as 1/rate: the simulated p99 is taken at the local rate, as the busy share is.
		p99, at := s.P99Ms, ""
		if l.RPS > 0 && s.RPS > 0 && math.Abs(s.RPS/l.RPS-1) > 0.02 {
			p99 = s.P99Ms * s.RPS / l.RPS
			at = fmt.Sprintf(" at the local rate (%.1f ms at %.0f rps)", s.P99Ms, s.RPS)
		}
		r := p99 / l.P99Ms
		row.check("p99", math.Abs(r-1) <= P99Ratio, fmt.Sprintf("local %.1f ms, sim %.1f ms%s (x%.2f)", l.P99Ms, p99, at, r))
	}
}

func (row *Row) check(what string, ok bool, text string) {
	row.Checks = append(row.Checks, Check{What: what, OK: ok, Text: text})
}

// samePlacement says whether both targets put as many connections on each pod, pods taken in
// slot order (the pods' names differ between the targets, their order does not), and spread
// them as evenly over each pod's workers (the workers' CV per pod, the same multiset).
func samePlacement(l, s *analysis.Result) bool {
	if !equal(counts(l.Connections), counts(s.Connections)) {
		return false
	}
	a, b := counts(l.WorkerCV), counts(s.WorkerCV)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6 {
			return false
		}
	}
	return true
}

func counts(m map[string]float64) []float64 {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]float64, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	sort.Float64s(out)
	return out
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
