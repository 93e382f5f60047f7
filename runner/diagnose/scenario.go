package diagnose

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// The local target's share of a saved scenario: its own six pods, and a rate the two-core
// harness holds with room to spare (the harness, not the pool, would otherwise set it).
const (
	localPods   = 6
	localMaxQPS = 3000
)

// ClientGuess is the client diagnose takes the pool's traffic to come from, as the lab runs it.
type ClientGuess struct {
	Client   stacks.Client
	Shape    string
	Evidence []string
}

// GuessClient names the likely client from what the stats show: streams in flight per
// connection, whether connections open at a stream cap, and how long streams live.
func GuessClient(w *Window, r *Report) ClientGuess {
	active := math.Max(1, math.Round(r.ConnectionsActive))
	streams := math.Max(1, math.Round(r.StreamsPerConn*r.ConnectionsActive))
	// At the cap: a momentary reading of streams in flight catches some of each connection's
	// streams between a response and the next request, so half the cap counts.
	capped, cap := false, 0.0
	if f := w.InForce; f != nil && f.MaxConcurrentStreams > 0 && f.MaxConcurrentStreams < 2147483647 {
		cap = float64(f.MaxConcurrentStreams)
		capped = r.StreamsPerConn >= 0.5*cap
	}
	perConn := fmt.Sprintf("%.1f streams in flight per open connection over %d connection(s)", r.StreamsPerConn, int(active))
	grpc := func(mode string) stacks.Client {
		return stacks.Client{Kind: "grpc", Mode: mode, Concurrency: clampInt(int(streams), 1, 20000), Connections: clampInt(int(active), 1, 1000), Authority: "grpcbin.igw-test"}
	}
	switch {
	case r.Streams != nil && r.Streams.LongLived && r.StreamsPerConn >= 2:
		c := grpc(stacks.GRPCServerStream)
		return ClientGuess{c, "long-lived streams multiplexed on few connections", []string{r.Streams.Text, perConn,
			"many long streams on one connection is what a gRPC ClientConn holding server streams does"}}
	case r.Streams != nil && r.Streams.LongLived:
		return ClientGuess{stacks.Client{Kind: "h2dial", Mode: "distinct", Concurrency: clampInt(int(active), 1, 20000), Path: "/sse", LongStream: true},
			"long-lived streams, about one per connection", []string{r.Streams.Text, perConn,
				"one long stream per connection is what event-stream (SSE) and long-poll clients hold"}}
	case capped && (r.ConnectionsOpened > 0 || active > 1):
		// Once it holds enough connections a client that dials at the cap opens no more, and
		// from the gateway's side looks like one that queues at it; what tells them apart is
		// that it holds several, each near the cap (x/net's Transport dials a connection only
		// when all it holds are full: transport.go ClientConn.ReserveNewRequest), where a
		// gRPC ClientConn with pick_first holds one and queues behind it.
		why := fmt.Sprintf("%d connection(s) opened in the window at the cap", int(r.ConnectionsOpened))
		if r.ConnectionsOpened == 0 {
			why = fmt.Sprintf("none opened in the window, but %d held, each near the cap: a queuing client (a gRPC ClientConn) would hold one", int(active))
		}
		return ClientGuess{stacks.Client{Kind: "h2dial", Mode: "shared", Concurrency: clampInt(int(streams), 1, 20000), Path: "/get"},
			"one shared transport that dials at the stream cap", []string{perConn,
				fmt.Sprintf("at the stream cap (%d): %s; the client dials when its connections are full, as Go's x/net http2.Transport does", int(cap), why)}}
	case capped:
		return ClientGuess{grpc(stacks.GRPCUnary), "queues at the stream cap",
			[]string{perConn, fmt.Sprintf("at the stream cap (%d) on one connection, none opened in the window: the client queues its calls, as a gRPC ClientConn does", int(cap))}}
	case r.StreamsPerConn >= 2:
		return ClientGuess{grpc(stacks.GRPCUnary), "a ClientConn per connection, every call on it",
			[]string{perConn, "no stream cap reached and no connection opened for the load: all streams share the few connections the client holds, as a gRPC ClientConn with pick_first (or one shared HTTP/2 transport) does"}}
	default:
		return ClientGuess{stacks.Client{Kind: "h2dial", Mode: "distinct", Concurrency: clampInt(int(active), 1, 20000), Path: "/get"},
			"many connections, about one stream each", []string{perConn, "about one stream per connection: each client (or client thread) holds its own connection"}}
	}
}

// SaveScenario writes the pool and traffic diagnose read as a scenario the lab runs: the full
// pool (which the simulated target runs as it is) and a local section scaling it to the local
// target's pods. file names it (the scenario's name is file's stem). The scenario is parsed
// back with the catalog's own loader before it is returned, so what is written always loads.
// The record's time is the window's end.
func SaveScenario(w *Window, r *Report, file string) ([]byte, error) {
	at := w.End
	if at.IsZero() {
		at = time.Now()
	}
	name := strings.TrimSuffix(filepath.Base(file), ".yaml")
	if filepath.Ext(file) != ".yaml" {
		return nil, fmt.Errorf("--save-scenario %s: a scenario file's name ends in .yaml", file)
	}
	if r.Verdict == NotEnoughData {
		return nil, fmt.Errorf("--save-scenario %s: nothing to save, %s", file, r.Summary)
	}
	g := GuessClient(w, r)
	d := &stacks.Diagnosed{Source: w.Source, At: at.UTC().Format(time.RFC3339), Window: stacks.Duration(w.Span.Round(time.Second)),
		Pods: len(r.Pods), Connections: round3(r.Connections), CVConnections: round3(r.CVConnections), CVRequests: round3(r.CVRequests),
		Chance: r.ChanceVerdict, Verdict: r.Verdict, HotPod: r.HotPod, StreamsPerConnection: round3(r.StreamsPerConn),
		StreamLifeS: -1, Client: g.Client.Kind, Shape: g.Shape, Evidence: g.Evidence, Placement: "random"}
	if w.Span > 0 {
		d.RPS = round3(r.Requests / w.Span.Seconds())
	}
	if r.Streams != nil && r.Streams.MeanLifeS >= 0 {
		d.StreamLifeS = round3(r.Streams.MeanLifeS)
	}
	var sent float64
	for _, p := range r.Pods {
		d.ConnectionsPerPod = append(d.ConnectionsPerPod, p.Seen)
	}
	for _, p := range w.Pods {
		sent += p.Delta.TxBytes
	}
	if r.Requests > 0 {
		d.ResponseBytes = math.Round(sent / r.Requests)
	}
	if r.ChanceVerdict == analysis.MoreConcentrated {
		d.Placement = "affinity"
		d.Unread = append(d.Unread, stacks.Unread{What: "what places connections beyond chance (client affinity, source-IP hashing, endpoints missing in front of the gateway)",
			Default: "the lab places connections at random over the pods, as the kernel's hash behind a Service does: the affinity seen is not reproduced"})
	}
	if strings.HasPrefix(w.Names.HCMPrefix, "outbound_") {
		d.Gateway = "istio"
	}

	sc := savedScenario{Name: name, Order: 5000, Optional: true, Diagnosed: d, Client: savedClientOf(g.Client),
		Title:   fmt.Sprintf("Saved by diagnose: %d pods, %d connections, %s", len(r.Pods), int(r.Connections), g.Shape),
		Teaches: "The pool and traffic igwlab diagnose read from " + w.Source + ": " + r.Summary + ".",
		Watch:   fmt.Sprintf("the spread of %d connections over %d pods against chance (diagnosed CV %.3f, %s); the hottest worker", int(r.Connections), len(r.Pods), r.CVConnections, r.ChanceVerdict),
		Load:    savedLoad{Duration: "60s", Warmup: "10s", Settle: "5s"},
		Pool:    savedPool{Replicas: len(r.Pods)}}
	if k, _ := stacks.LookupClient(g.Client.Kind); d.RPS > 0 && !k.ClosedLoop {
		sc.Client.QPS = math.Round(d.RPS)
	}
	if g.Client.Kind != "grpc" && !g.Client.LongStream && d.ResponseBytes > 0 {
		sc.Client.Path = "/bytes/" + strconv.Itoa(clampInt(int(d.ResponseBytes), 1, 1<<20))
	}
	workers := 0
	for _, p := range w.Pods {
		workers = max(workers, p.Workers)
	}
	if workers > 0 {
		sc.Pool.Concurrency = workers
	} else {
		d.Unread = append(d.Unread, stacks.Unread{What: "workers per pod (server_info's concurrency)", Default: "the target's own"})
	}
	if limit := cpuLimit(w); limit > 0 {
		sc.Pool.CPULimit = stacks.CPU(math.Round(limit * 1000)).String()
	} else {
		d.Unread = append(d.Unread, stacks.Unread{What: "the gateway container's CPU limit (cAdvisor's container_spec_cpu_quota)", Default: "no CPU limit"})
	}
	d.Unread = append(d.Unread,
		stacks.Unread{What: "the gateway container's CPU request", Default: "the target's own (the HPA reads utilisation against it)"},
		stacks.Unread{What: "the gateway container's memory limit", Default: "none: the lab models no memory limit"})
	if f := w.InForce; f != nil {
		d.Envoy = f.Envoy
		sc.Knobs = knobTree(f.Knobs)
	} else {
		d.Unread = append(d.Unread, stacks.Unread{What: "the knobs in force (/config_dump)", Default: "Envoy's defaults for the lab's release"})
	}
	if r.Streams == nil || r.Streams.MeanLifeS < 0 {
		d.Unread = append(d.Unread, stacks.Unread{What: "stream lifetimes (no stream ended in the window)", Default: "the client's own: short requests"})
	}
	if r.Requests == 0 || sent == 0 {
		d.Unread = append(d.Unread, stacks.Unread{What: "response sizes (downstream_cx_tx_bytes_total)", Default: "go-httpbin's /get"})
	}
	sc.Local = localPart(sc, len(r.Pods))

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Written by igwlab diagnose --save-scenario from %s at %s.\n", w.Source, d.At)
	fmt.Fprintf(&buf, "# Run it: igwlab suite --catalog %s --only %s (add --target sim to run the full pool).\n", filepath.Dir(file), name)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(sc); err != nil {
		return nil, err
	}
	if _, err := stacks.ParseFile(filepath.Base(file), buf.Bytes()); err != nil {
		return nil, fmt.Errorf("--save-scenario %s: the scenario diagnose built does not load (a bug; nothing written): %w", file, err)
	}
	return buf.Bytes(), nil
}

// localPart scales the pool down to the local target's pods, keeping the connections per pod
// (the chance of a spread depends on them) and the rate per pod, under what the harness holds.
func localPart(sc savedScenario, pods int) *savedLocal {
	l := &savedLocal{Load: savedLoad{Duration: "8s", Warmup: "1s", Settle: "1s"}}
	why := []string{"the local target's window is 8 s"}
	f := 1.0
	if pods > localPods {
		f = float64(localPods) / float64(pods)
		l.Pool = &savedPool{Replicas: localPods}
		why = append(why, fmt.Sprintf("its pool is %d pods, so the clients' connections and streams are scaled by %d/%d to keep as many per pod", localPods, localPods, pods))
		if c := scaled(sc.Client.Concurrency, f); c != sc.Client.Concurrency {
			l.Client.Concurrency = c
		}
		if sc.Client.Connections > 0 {
			if c := scaled(sc.Client.Connections, f); c != sc.Client.Connections {
				l.Client.Connections = c
			}
		}
	}
	if q := sc.Client.QPS * f; q > localMaxQPS {
		l.Client.QPS = localMaxQPS
		why = append(why, fmt.Sprintf("the rate is held to %d requests a second, which two shared cores drive with room to spare", localMaxQPS))
	} else if f < 1 && sc.Client.QPS > 0 {
		l.Client.QPS = math.Max(1, math.Round(q))
	}
	l.Why = strings.Join(why, "; ") + "."
	return l
}

func scaled(n int, f float64) int { return max(1, int(math.Round(float64(n)*f))) }

// cpuLimit is the pods' CPU limit in cores (the largest read; 0 without one).
func cpuLimit(w *Window) float64 {
	var c float64
	for _, v := range w.CPU {
		c = math.Max(c, v.LimitCores)
	}
	return c
}

// knobTree nests the knobs the dump sets ("hcm.http2_protocol_options.max_concurrent_streams")
// as the scenario's knobs section writes them, each value typed as the catalog reads it.
func knobTree(knobs []stats.KnobInForce) map[string]any {
	out := map[string]any{}
	for _, k := range knobs {
		if !k.Set {
			continue
		}
		parts := strings.Split(k.Path, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = scalar(k.Value)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func scalar(v string) any {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	if v == "{}" {
		return map[string]any{}
	}
	return v
}

func clampInt(v, lo, hi int) int { return min(hi, max(lo, v)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
