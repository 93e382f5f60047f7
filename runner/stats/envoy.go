package stats

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/igwlab/igwlab/internal/argmax"
)

// Names are the installation-specific names a gateway reports under.
type Names struct {
	// HCMPrefix is the http_conn_manager_prefix label (outbound_0.0.0.0_80 on the Istio gateway
	// chart, outbound_0.0.0.0_8080 on the older istioctl gateway). In the admin's own names it
	// carries a trailing ";": http.outbound_0.0.0.0_80;.downstream_cx_total.
	HCMPrefix string `json:"hcm_prefix"`
	// Listener is the listener_address label, e.g. 0.0.0.0_80.
	Listener string `json:"listener"`
	// Cluster is the upstream cluster's cluster_name label.
	Cluster string `json:"cluster"`
}

// notGateway are HCM prefixes of a proxy's own listeners (admin, stats, health, its xDS
// client), not traffic: Istio's (admin, prometheus_stats, stats, agent, the health and stats
// inbounds), Envoy's (admin, async-client), Envoy Gateway's (eg-stats-http, eg-ready-http),
// Contour's (stats, health, stats-health, envoy-admin), Gloo's (prometheus) and Consul's
// (envoy_prometheus_metrics).
var notGateway = []string{"admin", "prometheus_stats", "stats", "agent", "inbound_0.0.0.0_15021", "inbound_0.0.0.0_15090",
	"async-client", "eg-stats-http", "eg-ready-http", "health", "stats-health", "envoy-admin", "prometheus", "envoy_prometheus_metrics"}

// Pick names the connection manager (by stat prefix) and the listener (by address) that take
// the gateway's traffic, where they are not to be discovered; "" discovers.
type Pick struct {
	HCMPrefix, Listener string
}

// Discover finds the HCM prefix, listener and upstream cluster from what the pods report: the
// traffic-carrying outbound HCM with the most connections, the listener it belongs to, and
// the cluster whose name contains clusterHint with the most requests. It is DiscoverAny for an
// Istio gateway: no outbound_ connection manager is an error.
func Discover(snaps []Snapshot, clusterHint string) (Names, error) {
	prefixes := map[string]float64{}
	listeners := map[string]float64{}
	clusters := map[string]float64{}
	for _, s := range snaps {
		for k, v := range s.LabelValues("envoy_http_downstream_cx_total", "http_conn_manager_prefix") {
			prefixes[k] += v + 1e-9 // present but idle still counts, below any traffic
		}
		for k, v := range s.LabelValues("envoy_listener_downstream_cx_total", "listener_address") {
			listeners[k] += v + 1e-9
		}
		for k, v := range s.LabelValues("envoy_cluster_upstream_rq_total", "cluster_name") {
			if strings.Contains(k, clusterHint) {
				clusters[k] += v + 1e-9
			}
		}
	}
	var n Names
	n.HCMPrefix = best(prefixes, func(p string) bool {
		for _, x := range notGateway {
			if p == x {
				return false
			}
		}
		return strings.HasPrefix(p, "outbound_")
	})
	if n.HCMPrefix == "" {
		return n, fmt.Errorf("no gateway HTTP connection manager stats found (envoy_http_downstream_cx_total with an outbound_ prefix); is proxyStatsMatcher including http.*downstream_cx.*?")
	}
	want := strings.TrimPrefix(n.HCMPrefix, "outbound_")
	if _, ok := listeners[want]; ok {
		n.Listener = want
	} else {
		n.Listener = best(listeners, func(string) bool { return true })
	}
	n.Cluster = best(clusters, func(string) bool { return true })
	return n, nil
}

// DiscoverAny finds the names on any Envoy by their role, for diagnose: the connection manager
// that carries the traffic (an Istio gateway's outbound_ one; otherwise the one with the most
// requests and connections that is not the proxy's own: Envoy Gateway's http-10080, Contour's
// and Emissary's ingress_http, Gloo's http), and the listener that takes it (trafficListener).
// pick names either instead. A page with no traffic connection manager (a TCP proxy: Consul's
// default public listener) has an empty HCMPrefix; one with no listener at all is an error.
func DiscoverAny(snaps []Snapshot, pick Pick) (Names, error) {
	if n, err := Discover(snaps, ""); err == nil && pick == (Pick{}) {
		return n, nil
	}
	prefixes := map[string]float64{}
	listeners := map[string]float64{}
	for _, s := range snaps {
		for _, fam := range []string{"envoy_http_downstream_rq_total", "envoy_http_downstream_cx_total"} {
			for k, v := range s.LabelValues(fam, "http_conn_manager_prefix") {
				prefixes[k] += v + 1e-9
			}
		}
		for k, v := range s.LabelValues("envoy_listener_downstream_cx_total", "listener_address") {
			listeners[k] += v + 1e-9
		}
	}
	var n Names
	switch {
	case pick.HCMPrefix != "":
		if _, ok := prefixes[pick.HCMPrefix]; !ok {
			return n, fmt.Errorf("no HTTP connection manager with the stat prefix %q in the stats (there are: %s)", pick.HCMPrefix, keysText(prefixes))
		}
		n.HCMPrefix = pick.HCMPrefix
	default:
		n.HCMPrefix = best(prefixes, func(p string) bool { return !slices.Contains(notGateway, p) })
	}
	switch {
	case pick.Listener != "":
		if _, ok := listeners[pick.Listener]; !ok {
			return n, fmt.Errorf("no listener %q in the stats (there are: %s)", pick.Listener, keysText(listeners))
		}
		n.Listener = pick.Listener
	default:
		n.Listener = trafficListener(snaps, n.HCMPrefix, listeners)
	}
	if n.HCMPrefix == "" && n.Listener == "" {
		return n, fmt.Errorf("no connection manager (envoy_http_downstream_rq_total) and no listener (envoy_listener_downstream_cx_total) stats found, under Istio's tag names or Envoy's; does the stats matcher drop them? (Istio's default proxyStatsMatcher does: include http.* and listener.*)")
	}
	return n, nil
}

// hcmListeners is the family that ties a connection manager to its listener: Envoy counts
// every HCM's completed requests again per listener, in listener.<address>.http.<stat_prefix>.
// (source/common/http/conn_manager_impl.cc, ConnectionManagerImpl::generateListenerStats).
const hcmListeners = "envoy_listener_http_downstream_rq_completed"

// trafficListener picks the listener that takes the traffic, by the first rule that names one:
// the listener an Istio outbound_ prefix is named after; the listeners hcm runs on
// (hcmListeners), the one with the most connections; a listener on the port hcm's name ends
// in (Envoy Gateway's http-10080); otherwise the one with the most connections among those that
// run none of the proxy's own connection managers (Consul's metrics listener on :20200 can
// take more connections than a quiet service).
func trafficListener(snaps []Snapshot, hcm string, listeners map[string]float64) string {
	if l, ok := strings.CutPrefix(hcm, "outbound_"); ok && listeners[l] > 0 {
		return l
	}
	own, runs := map[string]bool{}, map[string]bool{}
	for _, s := range snaps {
		f := s.Families[hcmListeners]
		for _, m := range f.GetMetric() {
			var prefix, addr string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "http_conn_manager_prefix":
					prefix = lp.GetValue()
				case "listener_address":
					addr = lp.GetValue()
				}
			}
			if slices.Contains(notGateway, prefix) {
				own[addr] = true
			}
			if hcm != "" && prefix == hcm {
				runs[addr] = true
			}
		}
	}
	if l := best(listeners, func(l string) bool { return runs[l] }); l != "" {
		return l
	}
	if i := strings.LastIndexAny(hcm, "_-"); i >= 0 {
		if port := hcm[i+1:]; port != "" && strings.Trim(port, "0123456789") == "" {
			if l := best(listeners, func(l string) bool { return strings.HasSuffix(l, "_"+port) }); l != "" {
				return l
			}
		}
	}
	if l := best(listeners, func(l string) bool { return !own[l] }); l != "" {
		return l
	}
	return best(listeners, func(string) bool { return true })
}

// keysText lists a map's keys, sorted.
func keysText(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// best is the key of m's largest value that ok accepts, the smallest key on a tie, or "".
func best(m map[string]float64, ok func(string) bool) string {
	k, _ := argmax.Key(m, ok)
	return k
}

// Pod is one pod's numbers under the discovered names.
type Pod struct {
	Name string `json:"name"`

	CxHTTP2Total       float64 `json:"downstream_cx_http2_total"`
	CxTotal            float64 `json:"downstream_cx_total"`
	CxActive           float64 `json:"downstream_cx_active"`
	RqTotal            float64 `json:"downstream_rq_total"`
	RqActive           float64 `json:"downstream_rq_active"`
	Rq2xx              float64 `json:"downstream_rq_2xx"`
	Rq4xx              float64 `json:"downstream_rq_4xx"`
	Rq5xx              float64 `json:"downstream_rq_5xx"`
	MaxRequestsReached float64 `json:"downstream_cx_max_requests_reached"`
	MaxDurationReached float64 `json:"downstream_cx_max_duration_reached"`
	RqIdleTimeout      float64 `json:"downstream_rq_idle_timeout"`
	// RqMaxDurationReached counts streams max_stream_duration ended; TxBytes the bytes the
	// connection manager sent its clients: where a long-lived stream's messages went.
	RqMaxDurationReached float64 `json:"downstream_rq_max_duration_reached"`
	TxBytes              float64 `json:"downstream_cx_tx_bytes_total"`
	CxIdleTimeout        float64 `json:"downstream_cx_idle_timeout"`
	DrainClose           float64 `json:"downstream_cx_drain_close"`
	CxDestroy            float64 `json:"downstream_cx_destroy"`
	ProtocolErrors       float64 `json:"downstream_cx_protocol_error"`
	// HTTP/2 codec stats: Envoy keeps the downstream ones at the root (http2.*, summed over the
	// proxy's listeners), with no labels.
	StreamRefused float64 `json:"http2_stream_refused_errors"`
	GoAwayFinal   float64 `json:"http2_goaway_sent"`
	// Emulator-only (igwlab.*) stats; absent on a real Envoy. They may add detail to a call,
	// never decide one.
	Drains     float64 `json:"drains_started"`
	GoAwaySent float64 `json:"goaway_sent"`

	WorkerCx     map[int]float64 `json:"worker_cx_total"`
	WorkerActive map[int]float64 `json:"worker_cx_active"`
	WorkerBusyNs map[int]float64 `json:"worker_busy_ns,omitempty"`
	// Loops are the workers' own signals (watchdog misses, dispatcher histograms); nil where
	// the page has none.
	Loops map[int]WorkerLoop `json:"worker_loops,omitempty"`

	UpCxTotal       float64 `json:"upstream_cx_total"`
	UpRqTotal       float64 `json:"upstream_rq_total"`
	PendingActive   float64 `json:"upstream_rq_pending_active"`
	PendingOverflow float64 `json:"upstream_rq_pending_overflow"`
	CxOverflow      float64 `json:"upstream_cx_overflow"`
	Paused          float64 `json:"upstream_flow_control_paused_reading_total"`
	Resumed         float64 `json:"upstream_flow_control_resumed_reading_total"`
	RxBuffered      float64 `json:"upstream_cx_rx_bytes_buffered"`
	TxBuffered      float64 `json:"upstream_cx_tx_bytes_buffered"`
	SSLHandshake    float64 `json:"ssl_handshake"`
	// LCxTotal and LCxActive are the listener's own connection counters: what a listener
	// without an HTTP connection manager (a TCP proxy) still counts.
	LCxTotal  float64 `json:"listener_downstream_cx_total"`
	LCxActive float64 `json:"listener_downstream_cx_active"`
	// Uptime is server.uptime: seconds since this Envoy started (0 where not exported).
	Uptime float64 `json:"uptime_s,omitempty"`
	// Concurrency is server.concurrency: the Envoy's workers (0 where not exported).
	Concurrency float64 `json:"concurrency,omitempty"`

	RqTime Buckets `json:"-"`
	// CxLength is downstream_cx_length_ms: how long the connections that closed had lived.
	CxLength Buckets `json:"-"`
	// Present is false when the pod could not be read.
	Present bool `json:"present"`
}

// Extract reads a pod's numbers from a snapshot.
func Extract(s Snapshot, n Names) Pod {
	h := Labels{"http_conn_manager_prefix": n.HCMPrefix}
	c := Labels{"cluster_name": n.Cluster}
	l := Labels{"listener_address": n.Listener}
	get := func(name string, want Labels) float64 { return s.Sum(name, want) }
	p := Pod{Name: s.Pod, Present: s.Families != nil}
	p.CxHTTP2Total = get("envoy_http_downstream_cx_http2_total", h)
	p.CxTotal = get("envoy_http_downstream_cx_total", h)
	p.CxActive = get("envoy_http_downstream_cx_active", h)
	p.RqTotal = get("envoy_http_downstream_rq_total", h)
	p.RqActive = get("envoy_http_downstream_rq_active", h)
	p.Rq2xx = get("envoy_http_downstream_rq_2xx", h)
	p.Rq4xx = get("envoy_http_downstream_rq_4xx", h)
	p.Rq5xx = get("envoy_http_downstream_rq_5xx", h)
	p.MaxRequestsReached = get("envoy_http_downstream_cx_max_requests_reached", h)
	p.MaxDurationReached = get("envoy_http_downstream_cx_max_duration_reached", h)
	p.RqIdleTimeout = get("envoy_http_downstream_rq_idle_timeout", h)
	p.RqMaxDurationReached = get("envoy_http_downstream_rq_max_duration_reached", h)
	p.TxBytes = get("envoy_http_downstream_cx_tx_bytes_total", h)
	p.CxIdleTimeout = get("envoy_http_downstream_cx_idle_timeout", h)
	p.DrainClose = get("envoy_http_downstream_cx_drain_close", h)
	p.CxDestroy = get("envoy_http_downstream_cx_destroy", h)
	p.ProtocolErrors = get("envoy_http_downstream_cx_protocol_error", h)
	p.StreamRefused = get("envoy_http2_stream_refused_errors", nil)
	p.GoAwayFinal = get("envoy_http2_goaway_sent", nil)
	p.Drains = get(emulatorPrefix+"drains_started", nil)
	p.GoAwaySent = get(emulatorPrefix+"goaway_sent", nil)
	p.WorkerCx = s.WorkerSeries("downstream_cx_total", n.Listener)
	p.WorkerActive = s.WorkerSeries("downstream_cx_active", n.Listener)
	p.WorkerBusyNs = s.LabelIntValues(emulatorPrefix+"worker_busy_ns", "worker")
	p.Loops = s.WorkerLoops()
	p.UpCxTotal = get("envoy_cluster_upstream_cx_total", c)
	p.UpRqTotal = get("envoy_cluster_upstream_rq_total", c)
	p.PendingActive = get("envoy_cluster_upstream_rq_pending_active", c)
	p.PendingOverflow = get("envoy_cluster_upstream_rq_pending_overflow", c)
	p.CxOverflow = get("envoy_cluster_upstream_cx_overflow", c)
	p.Paused = get("envoy_cluster_upstream_flow_control_paused_reading_total", c)
	p.Resumed = get("envoy_cluster_upstream_flow_control_resumed_reading_total", c)
	p.RxBuffered = get("envoy_cluster_upstream_cx_rx_bytes_buffered", c)
	p.TxBuffered = get("envoy_cluster_upstream_cx_tx_bytes_buffered", c)
	p.SSLHandshake = get("envoy_listener_ssl_handshake", l)
	p.LCxTotal = get("envoy_listener_downstream_cx_total", l)
	p.LCxActive = get("envoy_listener_downstream_cx_active", l)
	p.Uptime = get("envoy_server_uptime", nil)
	p.Concurrency = get("envoy_server_concurrency", nil)
	p.RqTime = s.Histogram("envoy_http_downstream_rq_time", h)
	p.CxLength = s.Histogram("envoy_http_downstream_cx_length_ms", h)
	return p
}

// LabelIntValues is LabelValues with integer label values (worker ids).
func (s Snapshot) LabelIntValues(name, label string) map[int]float64 {
	out := map[int]float64{}
	for k, v := range s.LabelValues(name, label) {
		if n, ok := workerID(k); ok {
			out[n] = v
		}
	}
	return out
}

// workerID reads a worker id as Envoy writes it: a plain decimal number. fmt.Sscanf's %d would
// also read "1abc" (and "01") as worker 1, so that one series silently replaced another's.
func workerID(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// Delta returns what happened between pre and post: counters subtract, gauges keep the later
// reading. A counter that went down means the pod restarted: the later reading is the whole
// window, and Restarted says so.
func Delta(pre, post Pod) (d Pod, restarted bool) {
	d = post
	sub := func(a, b float64) float64 {
		if b < a {
			restarted = true
			return b
		}
		return b - a
	}
	d.CxHTTP2Total = sub(pre.CxHTTP2Total, post.CxHTTP2Total)
	d.CxTotal = sub(pre.CxTotal, post.CxTotal)
	d.RqTotal = sub(pre.RqTotal, post.RqTotal)
	d.Rq2xx = sub(pre.Rq2xx, post.Rq2xx)
	d.Rq4xx = sub(pre.Rq4xx, post.Rq4xx)
	d.Rq5xx = sub(pre.Rq5xx, post.Rq5xx)
	d.MaxRequestsReached = sub(pre.MaxRequestsReached, post.MaxRequestsReached)
	d.MaxDurationReached = sub(pre.MaxDurationReached, post.MaxDurationReached)
	d.RqIdleTimeout = sub(pre.RqIdleTimeout, post.RqIdleTimeout)
	d.RqMaxDurationReached = sub(pre.RqMaxDurationReached, post.RqMaxDurationReached)
	d.TxBytes = sub(pre.TxBytes, post.TxBytes)
	d.CxIdleTimeout = sub(pre.CxIdleTimeout, post.CxIdleTimeout)
	d.DrainClose = sub(pre.DrainClose, post.DrainClose)
	d.CxDestroy = sub(pre.CxDestroy, post.CxDestroy)
	d.ProtocolErrors = sub(pre.ProtocolErrors, post.ProtocolErrors)
	d.StreamRefused = sub(pre.StreamRefused, post.StreamRefused)
	d.GoAwayFinal = sub(pre.GoAwayFinal, post.GoAwayFinal)
	d.Drains = sub(pre.Drains, post.Drains)
	d.GoAwaySent = sub(pre.GoAwaySent, post.GoAwaySent)
	d.UpCxTotal = sub(pre.UpCxTotal, post.UpCxTotal)
	d.UpRqTotal = sub(pre.UpRqTotal, post.UpRqTotal)
	d.PendingOverflow = sub(pre.PendingOverflow, post.PendingOverflow)
	d.CxOverflow = sub(pre.CxOverflow, post.CxOverflow)
	d.Paused = sub(pre.Paused, post.Paused)
	d.Resumed = sub(pre.Resumed, post.Resumed)
	d.SSLHandshake = sub(pre.SSLHandshake, post.SSLHandshake)
	d.LCxTotal = sub(pre.LCxTotal, post.LCxTotal)
	d.WorkerCx = subMap(pre.WorkerCx, post.WorkerCx, &restarted)
	d.WorkerBusyNs = subMap(pre.WorkerBusyNs, post.WorkerBusyNs, &restarted)
	d.Loops = subLoops(pre.Loops, post.Loops, &restarted)
	d.RqTime = post.RqTime.Sub(pre.RqTime)
	d.CxLength = post.CxLength.Sub(pre.CxLength)
	if !pre.Present {
		d = post // nothing to subtract: a pod that came up during the window
	}
	return d, restarted
}

func subMap(pre, post map[int]float64, restarted *bool) map[int]float64 {
	out := map[int]float64{}
	for k, v := range post {
		if v < pre[k] {
			*restarted = true
			out[k] = v
			continue
		}
		out[k] = v - pre[k]
	}
	return out
}

// emulatorPrefix starts every metric family only the local emulator serves (igwlab.* stats:
// worker busy time, drains started, GOAWAY frames sent). A real Envoy has none of them.
const emulatorPrefix = "envoy_igwlab_"

// EmulatorOnly reports whether a metric family is one only the emulator serves.
func EmulatorOnly(family string) bool { return strings.HasPrefix(family, emulatorPrefix) }

// RealGatewayView is the snapshot as a real Istio gateway would report it: without the
// emulator's own families.
func RealGatewayView(s Snapshot) Snapshot {
	out := s
	out.Families = make(map[string]*dto.MetricFamily, len(s.Families))
	for name, f := range s.Families {
		if !EmulatorOnly(name) {
			out.Families[name] = f
		}
	}
	return out
}

// WaypointRequests is the requests a waypoint pod's connection managers took, from its
// /stats/prometheus: envoy_http_downstream_rq_total (http.<prefix>.downstream_rq_total) summed
// over the managers that carry the mesh's requests. On an Istio waypoint those are the
// per-service chains of its main_internal listener, whose prefixes are inbound_<address>_<port>
// (pilot/pkg/networking/core/listener_waypoint.go, inboundChainConfig.StatPrefix); its
// connect_terminate manager counts the HBONE CONNECT streams (tunnels, not requests) and is
// left out, as are Envoy's and Istio's own (admin, stats, agent, health).
func WaypointRequests(s Snapshot) float64 {
	n := 0.0
	for prefix, v := range s.LabelValues("envoy_http_downstream_rq_total", "http_conn_manager_prefix") {
		if prefix != "connect_terminate" && !slices.Contains(notGateway, prefix) {
			n += v
		}
	}
	return n
}
