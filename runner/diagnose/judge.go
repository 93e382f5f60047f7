package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/fix"
)

// Verdicts.
const (
	BeyondChance   = "concentrated beyond chance"
	FewConnections = "concentrated because there are few connections"
	AsChance       = "spread as chance predicts"
	NotEnoughData  = "not enough data"
)

// Thresholds of the verdict.
const (
	// minRequests is the fewest requests in a window that say anything about spread.
	minRequests = 50
	// concentratedCV is the CV of requests across pods from which the pool is called
	// concentrated: at 0.5 the busiest pods carry well over one and a half times the mean.
	concentratedCV = 0.5
	// rotateEvery is how often count rotation should re-place each connection: often enough to
	// move a hot connection within a few of Prometheus' scrape intervals, rarely enough that the
	// reconnects (and their TLS handshakes) cost little.
	rotateEvery = 10 * time.Second
)

// Report is what diagnose found.
type Report struct {
	Verdict string  `json:"verdict"`
	Summary string  `json:"summary"`
	Source  string  `json:"source"`
	SpanS   float64 `json:"window_s"`

	Pods    []PodRow `json:"pods"`
	HotPod  string   `json:"hot_pod,omitempty"`
	HotPart float64  `json:"hot_pod_share,omitempty"` // the hot pod's share of the requests

	// Connections seen in the window (open at its start, or opened in it): what was placed.
	Connections       float64        `json:"connections"`
	ConnectionsOpened float64        `json:"connections_opened"`
	ConnectionsActive float64        `json:"connections_active"`
	CVConnections     float64        `json:"cv_connections"`
	Chance            *analysis.Band `json:"chance,omitempty"`
	ChanceVerdict     string         `json:"chance_verdict,omitempty"`
	Requests          float64        `json:"requests"`
	CVRequests        float64        `json:"cv_requests"`
	RequestsPerConn   float64        `json:"requests_per_connection"`
	StreamsPerConn    float64        `json:"active_streams_per_connection"`
	OlderThanWindow   float64        `json:"connections_older_than_window"`
	ClosedLifetimeP50 float64        `json:"closed_connection_lifetime_p50_ms,omitempty"`
	ClosedLifetimeP99 float64        `json:"closed_connection_lifetime_p99_ms,omitempty"`
	Rotation          Rotation       `json:"rotation"`
	Busy              []string       `json:"busy"`
	Client            string         `json:"client"`
	Lever             *Lever         `json:"lever,omitempty"`
	Notes             []string       `json:"notes,omitempty"`
	// Young are pods much younger than the oldest that carry far less than their share.
	Young []YoungPod `json:"young_pods,omitempty"`
	// Streams is the mix of streams the stats show: how long they live, drains that do not
	// finish (nil with none in flight).
	Streams *StreamMix `json:"streams,omitempty"`
	// CPU says, pod by pod, how its workers sit against its CPU limit and how often the kernel
	// held it back (empty where the source read no CPU limits).
	CPU []string `json:"cpu,omitempty"`
	// Loop is what the workers' own stats show (their event loops' busy time and iterations,
	// watchdog misses: stats.LoopEvidence), and Pegged the pod/worker whose loop never waited:
	// direct evidence of a saturated worker, not an inference from busy CPU. Empty where the
	// gateway exports none.
	Loop   string `json:"worker_loop,omitempty"`
	Pegged string `json:"pegged_worker,omitempty"`
	// LoadBy says what the load's spread is judged by when it is not the requests that began
	// in the window ("": the requests).
	LoadBy string `json:"load_by,omitempty"`
	// SinceStart says the counters are those since each Envoy started (Window.SinceStart).
	SinceStart bool `json:"since_start,omitempty"`
	// LoadUnit is what the load is counted in: requests, bytes sent or connections.
	LoadUnit string `json:"load_unit"`
	// NoEffect names the levers that would do nothing for what was seen, and why.
	NoEffect []string          `json:"no_effect,omitempty"`
	InForce  *InForce          `json:"in_force,omitempty"`
	Names    map[string]string `json:"names"`
	// Baseline is what moved since an earlier reading (--baseline).
	Baseline *Change `json:"baseline,omitempty"`
	// Ambient is the tier-by-tier reading of an ambient mesh (--waypoint-admin, --ztunnel).
	Ambient *Ambient `json:"ambient,omitempty"`
	// Fix is the lever in the configuration of the gateway --gateway names.
	Fix *fix.Rendering `json:"fix,omitempty"`
}

// PodRow is one pod's share of the window.
type PodRow struct {
	Name      string  `json:"name"`
	Seen      float64 `json:"connections_seen"`
	Opened    float64 `json:"connections_opened"`
	Active    float64 `json:"connections_active"`
	Requests  float64 `json:"requests"`
	RPS       float64 `json:"rps"`
	Streams   float64 `json:"active_streams"`
	Workers   int     `json:"workers"`
	WorkerCV  float64 `json:"worker_cv"`
	HotWorker int     `json:"hot_worker"`
	// WorkerConns are the connections each worker took, when the verdict is on one pod's
	// workers.
	WorkerConns []float64 `json:"worker_connections,omitempty"`
	CPUCores    float64   `json:"cpu_cores,omitempty"`
	Restarted   bool      `json:"restarted,omitempty"`
}

// Rotation is what rotates connections, as far as the gateway shows it.
type Rotation struct {
	MaxRequestsReached float64 `json:"max_requests_reached"`
	MaxDurationReached float64 `json:"max_duration_reached"`
	Text               string  `json:"text"`
}

// streamsInFlight is a pod's downstream_rq_active over the window: a gauge, read at each end.
// One reading is a moment, and a client that keeps its calls in flight can be caught between
// answers and its next calls (on two busy cores, a gRPC ClientConn's 50 calls read as 1), so
// where the window's start was read too the two readings are averaged.
func streamsInFlight(p PodWindow) float64 {
	if p.PreRead && !p.Restarted {
		return (p.Pre.RqActive + p.Post.RqActive) / 2
	}
	return p.Post.RqActive
}

// Judge makes the report for a window.
func Judge(w *Window) *Report {
	r := judge(w)
	r.NoEffect = noEffect(w, r)
	return r
}

func judge(w *Window) *Report {
	r := &Report{Source: w.Source, SpanS: w.Span.Seconds(), InForce: w.InForce, Notes: w.Missing, LoadUnit: "requests", SinceStart: w.SinceStart,
		Names: map[string]string{"hcm_prefix": w.Names.HCMPrefix, "listener": w.Names.Listener}}
	var seen, reqs, activeRq, sent []float64
	for _, p := range w.Pods {
		d := p.Delta
		opened, active, before := d.CxTotal, p.Post.CxActive, p.Pre.CxActive
		if w.Names.HCMPrefix == "" {
			// No connection manager: the listener's own counters are all there is.
			opened, active, before = d.LCxTotal, p.Post.LCxActive, p.Pre.LCxActive
		}
		row := PodRow{Name: p.Name, Opened: opened, Active: active, Requests: d.RqTotal,
			Streams: streamsInFlight(p), Workers: p.Workers, Restarted: p.Restarted}
		row.Seen = before + opened
		if p.Restarted {
			row.Seen = opened // the pod began again during the window: all it saw is new
		}
		if w.Span > 0 {
			row.RPS = d.RqTotal / w.Span.Seconds()
		}
		row.WorkerCV, row.HotWorker = workerSpread(p.Post.WorkerActive, d.WorkerCx)
		if cpu, ok := w.CPUSeconds[p.Name]; ok && w.Span > 0 {
			row.CPUCores = cpu / w.Span.Seconds()
		}
		r.Pods = append(r.Pods, row)
		seen, reqs, activeRq, sent = append(seen, row.Seen), append(reqs, row.Requests), append(activeRq, row.Streams), append(sent, d.TxBytes)
		r.ConnectionsOpened += row.Opened
		r.ConnectionsActive += row.Active
		r.Requests += row.Requests
		r.Rotation.MaxRequestsReached += d.MaxRequestsReached
		r.Rotation.MaxDurationReached += d.MaxDurationReached
		r.OlderThanWindow += math.Max(0, active-opened)
		lengths := d.CxLength
		if q := lengths.Quantile(0.5); !math.IsNaN(q) {
			r.ClosedLifetimeP50 = math.Max(r.ClosedLifetimeP50, q)
		}
		if q := lengths.Quantile(0.99); !math.IsNaN(q) {
			r.ClosedLifetimeP99 = math.Max(r.ClosedLifetimeP99, q)
		}
	}
	r.Connections = sum(seen)
	r.CVConnections, r.CVRequests = analysis.CV(seen), analysis.CV(reqs)
	if r.Connections > 0 {
		r.RequestsPerConn = r.Requests / r.Connections
	}
	if r.ConnectionsActive > 0 {
		r.StreamsPerConn = sum(activeRq) / r.ConnectionsActive
	}
	r.Rotation.Text = rotationText(w.InForce, r.Rotation, w.period())
	r.Loop, r.Pegged = loopText(w)
	r.Busy = busyText(w, r)
	r.Streams = streamMix(w, r)
	r.CPU, _ = cpuLines(w, r)
	if r.Requests < minRequests && r.Streams != nil && r.Streams.LongLived && sum(sent) > 0 {
		// Long-lived streams begin few requests: where their messages went is the load.
		reqs = sent
		r.CVRequests = analysis.CV(sent)
		r.LoadUnit = "bytes sent"
		r.LoadBy = "the bytes sent to clients (downstream_cx_tx_bytes_total), as the long-lived streams began too few requests in the window to count"
	}
	if w.Names.HCMPrefix == "" {
		reqs = seen
		r.CVRequests = r.CVConnections
		r.LoadUnit = "connections"
		r.LoadBy = fmt.Sprintf("the connections listener %s took, as no HTTP connection manager on it counts requests", w.Names.Listener)
	}
	n := len(r.Pods)
	switch {
	case r.Requests == 0 && r.Connections == 0:
		r.Verdict = NotEnoughData
		r.Summary = noLoadText(w)
		return r
	case n < 2:
		if judgeWorkers(r, w) {
			return r
		}
		r.Verdict = NotEnoughData
		r.Summary = fmt.Sprintf("%d gateway pod(s) read: spread needs two or more pods, or one pod's per-worker connection stats over two or more workers", n)
		return r
	case r.Requests < minRequests && r.LoadBy == "":
		r.Verdict = NotEnoughData
		r.Summary = fmt.Sprintf("%d requests in %s: too few to say how load is spread (at least %d)", int(r.Requests), w.Span.Round(time.Second), minRequests)
		return r
	}
	k := int(math.Round(r.Connections))
	r.Chance = analysis.Chance(k, n)
	r.ChanceVerdict, _ = r.Chance.Judge(r.CVConnections)
	hot := argmax(reqs)
	r.HotPod, r.HotPart = r.Pods[hot].Name, reqs[hot]/sum(reqs)
	placedBeyond := r.ChanceVerdict == analysis.MoreConcentrated
	loadBeyond := r.CVRequests > r.Chance.Hi+1e-9 && r.CVRequests >= concentratedCV
	switch {
	case placedBeyond || loadBeyond:
		r.Verdict = BeyondChance
	case r.CVRequests >= concentratedCV:
		r.Verdict = FewConnections
	default:
		r.Verdict = AsChance
	}
	r.Young = youngPods(w, r)
	r.Summary = summaryText(r, n)
	r.Client = clientText(r, w)
	r.Lever = chooseLever(r, w, placedBeyond)
	if l := r.Lever; w.Names.HCMPrefix == "" && l != nil && strings.HasPrefix(l.Knob, "hcm.") {
		// A TCP proxy has no HTTP connection manager for the knob to set.
		r.Lever = &Lever{Why: fmt.Sprintf("listener %s is a TCP proxy, so no HTTP connection manager knob applies; what rotates its connections is the TCP proxy's max_downstream_connection_duration (envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy), set through the gateway's own configuration, and clients must re-dial when it closes them", w.Names.Listener)}
	}
	return r
}

// noLoadText says there is nothing to judge, and where nothing was counted.
func noLoadText(w *Window) string {
	where := "listener " + w.Names.Listener
	if w.Names.HCMPrefix != "" {
		where += " (connection manager " + w.Names.HCMPrefix + ")"
	}
	when := w.period()
	workers := 0
	for _, p := range w.Pods {
		workers += p.Workers
	}
	return fmt.Sprintf("no load to judge: no connection or request counted on %s %s (%d pod(s), %d worker(s) idle)", where, when, len(w.Pods), workers)
}

func summaryText(r *Report, n int) string {
	what := r.LoadUnit
	hot := fmt.Sprintf("hot pod %s carries %.0f%% of the %s", r.HotPod, 100*r.HotPart, what)
	conns := fmt.Sprintf("%d connection(s) over %d pods: connection CV %.3f (%s; %s)",
		int(r.Connections), n, r.CVConnections, r.ChanceVerdict, r.Chance)
	var out string
	switch r.Verdict {
	case BeyondChance:
		out = fmt.Sprintf("%s CV %.3f across pods, more than %d randomly placed connections explain; %s; %s", what, r.CVRequests, int(r.Connections), hot, conns)
	case FewConnections:
		out = fmt.Sprintf("%s CV %.3f across pods, as random placement of only %d connection(s) makes it; %s; %s", what, r.CVRequests, int(r.Connections), hot, conns)
	default:
		out = fmt.Sprintf("%s CV %.3f across pods; %s", what, r.CVRequests, conns)
	}
	if r.LoadBy != "" {
		out += "; load judged by " + r.LoadBy
	}
	return out
}

// workerSpread is the CV of a pod's connections across its workers (active ones, or those
// opened in the window when none is active) and the busiest worker.
func workerSpread(active, opened map[int]float64) (float64, int) {
	m := active
	if sum(values(m)) == 0 {
		m = opened
	}
	if len(m) < 2 {
		return 0, argmaxMap(m)
	}
	return analysis.CV(values(m)), argmaxMap(m)
}

func values(m map[int]float64) []float64 {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]float64, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
	return out
}

func argmaxMap(m map[int]float64) int {
	best, bestV := 0, math.Inf(-1)
	for _, id := range sortedKeys(m) {
		if m[id] > bestV {
			best, bestV = id, m[id]
		}
	}
	return best
}

func sortedKeys(m map[int]float64) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// argmax is the first index of the largest value.
func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}
