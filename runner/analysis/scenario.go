package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Input is everything measured for one scenario run, in the analysis' own terms: the suite
// fills it from a target and a client, a re-analysis from a results folder.
type Input struct {
	Scenario Scenario
	// Departures are where the run departed from the lab's values: the scenario's own on this
	// target, then the target's (shown in the reports).
	Departures   []stacks.Departure
	Pre, Post    []stats.Pod // gateway pods, matched by name
	WaypointPre  []stats.Pod
	WaypointPost []stats.Pod
	// ZtunnelPre and ZtunnelPost are the node proxies' pages around the window.
	ZtunnelPre, ZtunnelPost []stats.Ztunnel
	// Tier is the tier Pre and Post are: "gateway", or "waypoint" for an east-west scenario.
	Tier  string
	Peaks Peaks
	// ClosedDuringLoad is how many connections the gateway saw close while the load ran
	// (downstream_cx_destroy, sampled each second): the ones rotation drained, for clients
	// that keep their connections.
	ClosedDuringLoad float64
	Client           *Client // nil when the client reported nothing
	Window           time.Duration
	// ClientRTT is the round-trip time the target added between the clients and the gateway
	// (the local target's --rtt); 0 where the network's own is all there is.
	ClientRTT time.Duration
	// Timeline is the window's samples, Step their interval; Marks the steps of the
	// scenario's own events, Initial the gateway pods the window started with, HPA the
	// autoscaler the pool is read against.
	Timeline []Sample
	Step     time.Duration
	Marks    []Mark
	Initial  []string
	HPA      HPA
	// Rotates says a knob drains connections on a schedule (count or duration rotation):
	// its reconnects are read over time even without events.
	Rotates bool // CPUPre and CPUPost are the gateway pods' proxy containers as their kubelets' cAdvisor
	// reported them around the window (empty where the target has no kubelet to read).
	CPUPre, CPUPost map[string]stats.CPU
}

// Scenario is what the analysis needs to know of the scenario that ran.
type Scenario struct {
	Name, Title, Hypothesis string
	// Client is the client kind (h2dial, fortio, grpc).
	Client string
	// Knobs are every knob in force, set or default.
	Knobs []stacks.KnobValue
	// Streams is the client's concurrency, and BodyBytes what each of its requests uploads.
	Streams, BodyBytes int
	// LongLived says the client holds long-lived streams (a gRPC stream mode, h2dial's
	// long_stream): the result then says where their messages went (Result.LongStreams).
	LongLived bool
}

// Client is what the load client saw in the window.
type Client struct {
	RPS                 float64
	Requests, Errors    int64
	P50, P90, P99, P999 float64 // milliseconds
	Connections         int     // connections the client opened
	SlowP99             float64 // the slow workers' p99 (ms), where the scenario has them
	// Open loop: the rate asked for, requests due and never sent, send lag p99 (ms).
	OfferedRPS, SendLagP99 float64
	Unsent                 int64
	// A client of long-lived streams: the streams it opened, how those that ended early
	// ended, and each connection it opened with the streams it carried.
	StreamsOpened int64
	StreamEnds    map[string]int64
	Conns         []h2dial.ConnUse
}

// Peaks are maxima seen by the once-a-second sampler during the window.
type Peaks struct {
	CxActive   float64 `json:"cx_active_sum"`
	RqActive   float64 `json:"rq_active_sum"`
	RxBuffered float64 `json:"upstream_cx_rx_bytes_buffered"`
	Pending    float64 `json:"upstream_rq_pending_active"`
	// WorkerBusy is the busiest worker's busy share within one sampling interval: a worker a
	// rotating connection saturates for a moment shows here while its share of the whole window
	// stays low.
	WorkerBusy float64 `json:"worker_busy,omitempty"`
}

// Tier is a pod tier's spread (the gateway, or the waypoint behind it).
type Tier struct {
	CV               float64            `json:"cv"`
	Connections      map[string]float64 `json:"connections"`
	ConnectionsTotal float64            `json:"connections_total"`
	Chance           *Band              `json:"chance,omitempty"`
	ChanceVerdict    string             `json:"chance_verdict,omitempty"`
	ChanceP          float64            `json:"chance_p,omitempty"`
	RequestsPerPod   map[string]float64 `json:"requests_per_pod"`
	CVRequests       float64            `json:"cv_requests"`
	WorkerCV         map[string]float64 `json:"worker_cv"`
	WorkerCVMean     float64            `json:"worker_cv_mean"`
	WorkerCVMax      float64            `json:"worker_cv_max"`
	// BusyMeasured says whether the target measures per-worker busy time. Envoy exports no
	// such stat (the emulator does), so on a real gateway BusyMax and BusyMean are absent, not 0.
	BusyMeasured bool    `json:"busy_measured"`
	BusyMax      float64 `json:"busy_max,omitempty"`
	BusyMean     float64 `json:"busy_mean,omitempty"`
	HotWorker    string  `json:"hot_worker,omitempty"`
	// Loop is what the workers' own stats say of the hottest (its event loop's busy share and
	// iterations, watchdog misses: stats.LoopEvidence); LoopPegged that its loop never waited.
	// Empty where the pods export none.
	Loop       string `json:"loop,omitempty"`
	LoopPegged bool   `json:"loop_pegged,omitempty"`
}

// Result is one scenario's measured outcome. Its JSON is the per-scenario entry of summary.json.
type Result struct {
	Name       string   `json:"name"`
	Title      string   `json:"title"`
	Hypothesis string   `json:"hypothesis,omitempty"`
	Client     string   `json:"client"`
	Status     Status   `json:"status"`
	Reason     string   `json:"reason,omitempty"`
	Disturbed  bool     `json:"disturbed,omitempty"`
	Faults     []string `json:"faults,omitempty"`
	// Warnings are problems the run got over (a stats read that needed a retry); unlike
	// faults, they leave the scenario's numbers whole.
	Warnings   []string           `json:"warnings,omitempty"`
	Knobs      []stacks.KnobValue `json:"knobs"`
	Departures []stacks.Departure `json:"local_departures,omitempty"`
	WindowS    float64            `json:"window_s"`
	// Streams, UploadBytes and ClientRTTMs are what an upload's throughput is judged by: the
	// client's concurrent streams, the bytes each request uploads, and the round-trip time the
	// target added between clients and gateway.
	Streams     int     `json:"streams,omitempty"`
	UploadBytes int     `json:"upload_bytes,omitempty"`
	ClientRTTMs float64 `json:"client_rtt_ms,omitempty"`

	Tier
	CVActive float64 `json:"cv_cx_active"`

	// GoAways is the connections rotation drained: those that closed while the load ran
	// (ClosedDuringLoad), counted only when the gateway's own drain counters moved.
	GoAways            float64 `json:"goaways"`
	MaxRequestsReached float64 `json:"max_requests_reached"`
	MaxDurationReached float64 `json:"max_duration_reached"`
	DrainClose         float64 `json:"drain_close"`
	RqIdleTimeout      float64 `json:"rq_idle_timeout"`
	CxIdleTimeout      float64 `json:"cx_idle_timeout"`
	RefusedStreams     float64 `json:"refused_streams"` // http2.stream_refused_errors
	ProtocolErrors     float64 `json:"protocol_errors"` // downstream_cx_protocol_error
	// DrainsStarted is the emulator's own count of drain sequences begun (igwlab.drains_started);
	// absent on a real gateway, it adds detail and decides nothing.
	DrainsStarted float64 `json:"drains_started,omitempty"`
	// TLSHandshakes is the handshakes the gateway's listener completed (listener ssl.handshake):
	// every new connection's cost where TLS terminates at the gateway; 0 on plain HTTP.
	TLSHandshakes      float64 `json:"tls_handshakes,omitempty"`
	FlowControlPaused  float64 `json:"flow_control_paused"`
	FlowControlResumed float64 `json:"flow_control_resumed"`
	PendingOverflow    float64 `json:"pending_overflow"`
	CxOverflow         float64 `json:"cx_overflow"`
	Peaks              Peaks   `json:"peaks"`

	RPS               float64 `json:"rps"`
	Requests          int64   `json:"requests"`
	Errors            int64   `json:"errors"`
	P50Ms             float64 `json:"p50_ms"`
	P90Ms             float64 `json:"p90_ms"`
	P99Ms             float64 `json:"p99_ms"`
	P999Ms            float64 `json:"p999_ms"`
	GatewayP99Ms      float64 `json:"gateway_p99_ms"`
	SlowP99Ms         float64 `json:"slow_p99_ms,omitempty"`
	ClientConnections int     `json:"client_connections"`
	// OfferedRPS, Unsent and SendLagP99Ms are an open-loop client's (see analysis.Client).
	OfferedRPS   float64 `json:"offered_rps,omitempty"`
	Unsent       int64   `json:"unsent,omitempty"`
	SendLagP99Ms float64 `json:"send_lag_p99_ms,omitempty"`

	Waypoint *Tier `json:"waypoint,omitempty"`
	// MeasuredTier is the tier the result's pods are ("waypoint" for an east-west scenario;
	// empty: the gateway's).
	MeasuredTier string `json:"measured_tier,omitempty"`
	// Ztunnel is the node proxies' share of the window, where the scenario went through them.
	Ztunnel *ZtunnelTier `json:"ztunnel,omitempty"`

	// HPA is what the gateway's autoscaler would make of the window; OverTime what a window
	// with events shows over time.
	HPA      *HPABlind `json:"hpa,omitempty"`
	OverTime *OverTime `json:"over_time,omitempty"`
	// LongStreams is what a client of long-lived streams shows (nil for other clients).
	LongStreams *Streams `json:"long_streams,omitempty"` // CPU is what the proxy containers used and how their CPU limit held them back.
	CPU         *CPUUse  `json:"cpu,omitempty"`
}

// Analyze computes a scenario's result.
func Analyze(in Input) *Result {
	r := &Result{
		Name: in.Scenario.Name, Title: in.Scenario.Title, Hypothesis: in.Scenario.Hypothesis,
		Client: in.Scenario.Client, Status: StatusOK, Knobs: in.Scenario.Knobs,
		WindowS: in.Window.Seconds(), Peaks: in.Peaks, Departures: in.Departures,
		ClientRTTMs: float64(in.ClientRTT) / float64(time.Millisecond),
	}
	if in.Scenario.BodyBytes > 0 {
		r.Streams, r.UploadBytes = in.Scenario.Streams, in.Scenario.BodyBytes
	}
	deltas, restarted := deltaAll(in.Pre, in.Post)
	if restarted && len(in.Marks) == 0 {
		r.Disturbed = true
		r.Faults = append(r.Faults, "a gateway pod's counters went back to zero during the window (restart)")
	}
	r.Tier = tier(deltas, in.Window)
	var active []float64
	for _, p := range in.Post {
		active = append(active, p.CxActive)
	}
	r.CVActive = CV(active)
	for _, d := range deltas {
		r.MaxRequestsReached += d.MaxRequestsReached
		r.MaxDurationReached += d.MaxDurationReached
		r.DrainClose += d.DrainClose
		r.RqIdleTimeout += d.RqIdleTimeout
		r.CxIdleTimeout += d.CxIdleTimeout
		r.RefusedStreams += d.StreamRefused
		r.ProtocolErrors += d.ProtocolErrors
		r.FlowControlPaused += d.Paused
		r.FlowControlResumed += d.Resumed
		r.PendingOverflow += d.PendingOverflow
		r.CxOverflow += d.CxOverflow
		r.DrainsStarted += d.Drains
		r.TLSHandshakes += d.SSLHandshake
	}
	if r.MaxRequestsReached+r.MaxDurationReached+r.DrainClose+r.CxIdleTimeout > 0 {
		r.GoAways = in.ClosedDuringLoad
	}
	var merged stats.Buckets
	for _, d := range deltas {
		merged = merged.Add(d.RqTime)
	}
	if q := merged.Quantile(0.99); !math.IsNaN(q) {
		r.GatewayP99Ms = q
	}
	if c := in.Client; c != nil {
		r.RPS, r.Requests, r.Errors = c.RPS, c.Requests, c.Errors
		r.P50Ms, r.P90Ms, r.P99Ms, r.P999Ms = c.P50, c.P90, c.P99, c.P999
		r.ClientConnections, r.SlowP99Ms = c.Connections, c.SlowP99
		r.OfferedRPS, r.Unsent, r.SendLagP99Ms = c.OfferedRPS, c.Unsent, c.SendLagP99
	}
	if in.Tier != "" && in.Tier != "gateway" {
		r.MeasuredTier = in.Tier
	}
	r.Ztunnel = ztunnelTier(in.ZtunnelPre, in.ZtunnelPost, in.Window)
	if len(in.WaypointPost) > 0 {
		wd, wr := deltaAll(in.WaypointPre, in.WaypointPost)
		if wr {
			r.Disturbed = true
		}
		w := tier(wd, in.Window)
		r.Waypoint = &w
	}
	if in.Step > 0 {
		h := in.HPA
		if h.Sync == 0 {
			h = DefaultHPA
		}
		r.HPA = hpaBlind(in.Timeline, h, in.Step)
	}
	if len(in.Marks) > 0 || in.Rotates {
		r.OverTime = overTime(in.Timeline, in.Marks, in.Initial, in.Step)
	}
	r.CPU = cpuUse(in.CPUPre, in.CPUPost, in.Post, in.Window)
	if in.Scenario.LongLived {
		r.LongStreams = streamsOf(deltas, in.Client, in.Scenario.Knobs)
	}
	return r
}

func deltaAll(pre, post []stats.Pod) ([]stats.Pod, bool) {
	byName := map[string]stats.Pod{}
	for _, p := range pre {
		byName[p.Name] = p
	}
	var out []stats.Pod
	restarted := false
	for _, p := range post {
		d, r := stats.Delta(byName[p.Name], p)
		restarted = restarted || r
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, restarted
}

// tier computes a tier's spread from per-pod deltas over a window.
func tier(deltas []stats.Pod, window time.Duration) Tier {
	t := Tier{Connections: map[string]float64{}, RequestsPerPod: map[string]float64{}, WorkerCV: map[string]float64{}}
	var conns, reqs, wcvs, busy []float64
	for _, d := range deltas {
		t.Connections[d.Name] = d.CxHTTP2Total
		t.RequestsPerPod[d.Name] = d.RqTotal
		conns = append(conns, d.CxHTTP2Total)
		reqs = append(reqs, d.RqTotal)
		t.ConnectionsTotal += d.CxHTTP2Total
		wcv := workerCV(d.WorkerCx)
		t.WorkerCV[d.Name] = wcv
		wcvs = append(wcvs, wcv)
		ids := slices.Sorted(maps.Keys(d.WorkerBusyNs))
		t.BusyMeasured = t.BusyMeasured || len(ids) > 0
		for _, id := range ids {
			ratio := 0.0
			if window > 0 {
				ratio = d.WorkerBusyNs[id] / float64(window.Nanoseconds())
			}
			busy = append(busy, ratio)
			if ratio > t.BusyMax {
				t.BusyMax, t.HotWorker = ratio, fmt.Sprintf("%s/worker_%d", d.Name, id)
			}
		}
	}
	t.CV = CV(conns)
	t.CVRequests = CV(reqs)
	if len(wcvs) > 0 {
		t.WorkerCVMean = mean(wcvs)
		_, t.WorkerCVMax = MinMax(wcvs)
	}
	rows := stats.LoopRows(deltas, window)
	t.Loop, t.LoopPegged = stats.LoopEvidence(rows, window)
	if len(busy) == 0 && len(rows) > 0 && rows[0].Busy >= 0 {
		// Envoy's own measure of a worker's busy time: its dispatcher's loop durations.
		t.BusyMeasured = true
		for _, r := range rows {
			busy = append(busy, r.Busy)
		}
		t.BusyMax, t.HotWorker = rows[0].Busy, fmt.Sprintf("%s/%s", rows[0].Pod, stats.WorkerName(rows[0].Worker))
	}
	t.BusyMean = mean(busy)
	if k := int(math.Round(t.ConnectionsTotal)); len(deltas) > 1 {
		t.Chance = Chance(k, len(deltas))
		t.ChanceVerdict, t.ChanceP = t.Chance.Judge(t.CV)
	}
	return t
}

// Busy returns the tier's hottest worker's busy ratio and whether the target measured it at
// all (results written before busy_measured existed carry a ratio only where it was).
func (t Tier) Busy() (float64, bool) { return t.BusyMax, t.BusyMeasured || t.BusyMax > 0 }

// BusyText is the hottest worker's busy ratio as a percentage, or "n/a" where the target does
// not measure it.
func (t Tier) BusyText() string {
	if b, ok := t.Busy(); ok {
		return fmt.Sprintf("%.0f%%", 100*b)
	}
	return "n/a"
}

// workerCV is the CV of connections across a pod's workers; 0 with fewer than two workers or
// no connections, as the lab has always computed it.
func workerCV(m map[int]float64) float64 {
	if len(m) < 2 {
		return 0
	}
	xs := make([]float64, 0, len(m))
	for _, v := range m {
		xs = append(xs, v)
	}
	return CV(xs)
}

// ScenarioOf is what the analysis needs of a scenario as it ran.
func ScenarioOf(sc stacks.Scenario) Scenario {
	return Scenario{Name: sc.Name, Title: sc.Title, Hypothesis: sc.Hypothesis, Client: sc.Client.Kind, Knobs: sc.Knobs.Effective(),
		Streams: sc.Client.Concurrency, BodyBytes: sc.Client.BodyBytes, LongLived: sc.Client.LongLived()}
}
