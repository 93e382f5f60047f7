// Package dashboard holds the lab's Grafana dashboard as data: every panel is a row of the lab's
// metric table, and every query is written once, here, against template variables, so the
// same dashboard fits the Istio gateway chart (listener on 80), the old istioctl gateway
// (8080), any upstream cluster and the local emulated pool. Package grafanajson renders it with
// Grafana's SDK; this package stays free of that SDK, so the igwlab command, which needs only
// the queries and the scrape config, does not compile it.
package dashboard

import (
	"sort"
	"strings"
)

// UID is the dashboard's stable identifier.
const UID = "igw-thread-concentration"

// Title is the dashboard's title.
const Title = "IGW Thread Concentration"

// Target is one query of a panel.
type Target struct {
	Expr, Legend string
}

// Panel is one time-series panel.
type Panel struct {
	Title       string
	Description string
	Unit        string
	Targets     []Target
	// LocalOnly marks a panel whose metric only the local emulator exports.
	LocalOnly bool
	// ClusterOnly marks a panel whose metrics come from the cluster (cAdvisor and
	// kube-state-metrics, which kube-prometheus-stack installs), not from Envoy.
	ClusterOnly bool
}

// Selectors used in queries; they expand Grafana's template variables.
const (
	H = `http_conn_manager_prefix="$hcm", pod=~"$pod"`
	C = `cluster_name="$cluster", pod=~"$pod"`
	// W selects the per-worker connection counters: Istio keeps the worker in the metric name.
	W = `{__name__=~"envoy_listener_worker_[0-9]+_downstream_cx_active", listener_address="$listener", pod=~"$pod"}`
)

func q(expr, legend string) Target { return Target{Expr: expr, Legend: legend} }

// Panels are the dashboard's panels, in order.
var Panels = []Panel{
	{Title: "CV of active connections across gateway pods (leading indicator)", Unit: "none",
		Description: "stddev/mean of downstream_cx_active across pods. 0 is even; sqrt(n-1) is everything on one pod. It rises before p99 does.",
		Targets:     []Target{q(`stddev(envoy_http_downstream_cx_active{`+H+`}) / avg(envoy_http_downstream_cx_active{`+H+`})`, "CV")}},
	{Title: "Active connections per pod", Unit: "none",
		Description: "The hotspot itself: a few pods holding the connections, the rest at zero.",
		Targets:     []Target{q(`sum by (pod) (envoy_http_downstream_cx_active{`+H+`})`, "{{pod}}")}},
	{Title: "HTTP/2 connections opened per pod", Unit: "none",
		Description: "downstream_cx_http2_total: a counter, so it keeps the distribution after the connections close.",
		Targets:     []Target{q(`sum by (pod) (envoy_http_downstream_cx_http2_total{`+H+`})`, "{{pod}}")}},
	{Title: "Request rate per pod", Unit: "reqps",
		Description: "Where the work goes; with rotation it moves from pod to pod over time.",
		Targets:     []Target{q(`sum by (pod) (rate(envoy_http_downstream_rq_total{`+H+`}[1m]))`, "{{pod}}")}},
	{Title: "Active requests and multiplexing depth per pod", Unit: "none",
		Description: "downstream_rq_active, and requests per active connection: how many streams share one thread's connection.",
		Targets: []Target{
			q(`sum by (pod) (envoy_http_downstream_rq_active{`+H+`})`, "active {{pod}}"),
			q(`sum by (pod) (envoy_http_downstream_rq_active{`+H+`}) / clamp_min(sum by (pod) (envoy_http_downstream_cx_active{`+H+`}), 1)`, "per connection {{pod}}"),
		}},
	{Title: "Request latency at the gateway (p50, p95, p99)", Unit: "ms",
		Description: "From downstream_rq_time, per request; downstream_cx_length_ms only updates when a connection closes.",
		Targets: []Target{
			q(`histogram_quantile(0.50, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{`+H+`}[1m])))`, "p50"),
			q(`histogram_quantile(0.95, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{`+H+`}[1m])))`, "p95"),
			q(`histogram_quantile(0.99, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{`+H+`}[1m])))`, "p99"),
		}},
	{Title: "GOAWAY rotations: by duration and by request count", Unit: "ops",
		Description: "max_connection_duration and max_requests_per_connection firing. max_requests_reached counts requests at or over the limit, not connections.",
		Targets: []Target{
			q(`sum by (pod) (rate(envoy_http_downstream_cx_max_duration_reached{`+H+`}[1m]))`, "duration {{pod}}"),
			q(`sum by (pod) (rate(envoy_http_downstream_cx_max_requests_reached{`+H+`}[1m]))`, "requests {{pod}}"),
		}},
	{Title: "Idle timeouts", Unit: "ops",
		Description: "stream_idle_timeout (rq) and idle_timeout (cx) firings.",
		Targets: []Target{
			q(`sum(rate(envoy_http_downstream_rq_idle_timeout{`+H+`}[1m]))`, "stream idle"),
			q(`sum(rate(envoy_http_downstream_cx_idle_timeout{`+H+`}[1m]))`, "connection idle"),
		}},
	{Title: "Upstream flow-control pauses", Unit: "ops",
		Description: "The gateway stopped reading the upstream because a downstream buffer was over its watermark.",
		Targets: []Target{
			q(`sum by (pod) (rate(envoy_cluster_upstream_flow_control_paused_reading_total{`+C+`}[1m]))`, "paused {{pod}}"),
			q(`sum by (pod) (rate(envoy_cluster_upstream_flow_control_resumed_reading_total{`+C+`}[1m]))`, "resumed {{pod}}"),
		}},
	{Title: "Upstream pool: pending requests and overflows", Unit: "none",
		Description: "Requests waiting for an upstream connection; overflows mean a circuit breaker rejected work.",
		Targets: []Target{
			q(`sum by (pod) (envoy_cluster_upstream_rq_pending_active{`+C+`})`, "pending {{pod}}"),
			q(`sum(rate(envoy_cluster_upstream_rq_pending_overflow{`+C+`}[1m]))`, "pending overflow"),
			q(`sum(rate(envoy_cluster_upstream_cx_overflow{`+C+`}[1m]))`, "connection overflow"),
		}},
	{Title: "Upstream bytes buffered", Unit: "bytes",
		Description: "Read and write buffers of the upstream connections; per_connection_buffer_limit_bytes bounds them.",
		Targets: []Target{
			q(`sum by (pod) (envoy_cluster_upstream_cx_rx_bytes_buffered{`+C+`})`, "rx {{pod}}"),
			q(`sum by (pod) (envoy_cluster_upstream_cx_tx_bytes_buffered{`+C+`})`, "tx {{pod}}"),
		}},
	{Title: "Connections per worker", Unit: "none",
		Description: "listener.<address>.worker_N.downstream_cx_active: the threads themselves.",
		Targets:     []Target{q(`label_replace(`+W+`, "worker", "$1", "__name__", "envoy_listener_worker_([0-9]+)_downstream_cx_active")`, "{{pod}} worker {{worker}}")}},
	{Title: "CV across the workers of each pod (H-E)", Unit: "none",
		Description: "Within-pod balance; only meaningful with concurrency >= 2. exact_balance drives it toward 0.",
		Targets:     []Target{q(`stddev by (pod) (`+W+`) / avg by (pod) (`+W+`)`, "{{pod}}")}},
	{Title: "ztunnel: TCP connections opened per node", Unit: "ops",
		Description: "Ambient's node proxies in front of the backends: uneven rates mean the concentration reaches past the gateway.",
		Targets:     []Target{q(`sum by (pod) (rate(istio_tcp_connections_opened_total{pod=~"$ztunnel"}[1m]))`, "{{pod}}")}},
	{Title: "ztunnel: bytes sent and received per node", Unit: "Bps",
		Description: "Bytes through each ztunnel, seen from the destination.",
		Targets: []Target{
			q(`sum by (pod) (rate(istio_tcp_sent_bytes_total{pod=~"$ztunnel"}[1m]))`, "sent {{pod}}"),
			q(`sum by (pod) (rate(istio_tcp_received_bytes_total{pod=~"$ztunnel"}[1m]))`, "received {{pod}}"),
		}},
	{Title: "TLS handshakes per pod", Unit: "ops",
		Description: "Every rotation costs a handshake on a TLS listener: the CPU price of rotating connections.",
		Targets:     []Target{q(`sum by (pod) (rate(envoy_listener_ssl_handshake{listener_address="$listener", pod=~"$pod"}[1m]))`, "{{pod}}")}},
	{Title: "Share of the pool's requests per pod (scale-out, rollouts)", Unit: "percentunit",
		Description: "Each pod's share of the gateway's requests. After a scale-out or a rollout a pod that turned ready and stays near 0 is one the long-lived connections never reached: the Service only places new connections. Rotation (max_requests_per_connection) moves them.",
		Targets:     []Target{q(`sum by (pod) (rate(envoy_http_downstream_rq_total{`+H+`}[1m])) / scalar(sum(rate(envoy_http_downstream_rq_total{`+H+`}[1m])))`, "{{pod}}")}},
	{Title: "Gateway pod uptime", Unit: "s",
		Description: "server.uptime: read with the share panel, a young pod with a small share is waiting for connections to move to it.",
		Targets:     []Target{q(`max by (pod) (envoy_server_uptime{pod=~"$pod"})`, "{{pod}}")}},
	{Title: "CPU against request: what the HPA sees", Unit: "percentunit", ClusterOnly: true,
		Description: "The pool's CPU usage over its CPU request, the HPA's metric (80% is the gateway chart's target). It can sit far below the target while one worker is pegged: the HPA never scales. From cAdvisor and kube-state-metrics (kube-prometheus-stack).",
		Targets:     []Target{q(`sum(rate(container_cpu_usage_seconds_total{pod=~"$pod", container="istio-proxy"}[1m])) / sum(kube_pod_container_resource_requests{pod=~"$pod", container="istio-proxy", resource="cpu"})`, "utilisation")}},
	{Title: "CPU throttling per gateway pod (CFS)", Unit: "percentunit", ClusterOnly: true,
		Description: "The share of each pod's CFS periods at whose end the kernel still held a thread of its proxy back: more Envoy workers than its CPU limit's cores, busy together, spend each 100 ms period's quota early and all wait for the next (scenario 21). From cAdvisor (kube-prometheus-stack's kubelet job); absent for a container with no CPU limit.",
		Targets:     []Target{q(`sum by (pod) (rate(container_cpu_cfs_throttled_periods_total{pod=~"$pod", container="istio-proxy"}[1m])) / sum by (pod) (rate(container_cpu_cfs_periods_total{pod=~"$pod", container="istio-proxy"}[1m]))`, "{{pod}}")}},
	{Title: "Streams in flight and streams max_stream_duration ended", Unit: "none",
		Description: "downstream_rq_active per pod: long-lived streams (gRPC watches, event streams) hold their connection, and a drain cannot move them; downstream_rq_max_duration_reached: streams max_stream_duration ended, whose successors a rotation then moves.",
		Targets: []Target{
			q(`sum by (pod) (envoy_http_downstream_rq_active{`+H+`})`, "in flight {{pod}}"),
			q(`sum by (pod) (rate(envoy_http_downstream_rq_max_duration_reached{`+H+`}[1m]))`, "ended {{pod}}"),
		}},
	{Title: "Worker event loop: share of time in callbacks (dispatcher stats)", Unit: "percentunit",
		Description: "Envoy's own measure of a worker's busy time: the sum of its event loop's iterations (listener_manager.worker_N.dispatcher.loop_duration_us, each from the poll's return to the next poll) per second. Near 100% the worker never waits for I/O: it is pegged. Needs the bootstrap's enable_dispatcher_stats (the lab turns it on with Istio's bootstrap override).",
		Targets:     []Target{q(`rate(`+loopSeries("_sum")+`[1m:5s]) / 1e6`, "{{pod}} worker {{worker}}")}},
	{Title: "Worker event loop iterations, p99 (dispatcher stats)", Unit: "ms",
		Description: "How long one pass of each worker's loop takes: everything that was ready when its poll returned. A saturated worker's iterations grow with its backlog, an idle one's stay near zero. Poll delay, the loop's other histogram, shows the kernel or the CPU limit holding a thread back, not a busy loop.",
		Targets:     []Target{q(`histogram_quantile(0.99, sum by (pod, worker, le) (rate(`+loopSeries("_bucket")+`[1m:5s]))) / 1000`, "{{pod}} worker {{worker}}")}},
	{Title: "Watchdog misses per worker", Unit: "none",
		Description: "server.worker_N.watchdog_miss (mega_miss): the guard dog found the worker's loop untouched for a whole check interval (200 ms, 1 s by default): one callback held the thread. On by default in every Envoy.",
		Targets: []Target{
			q(`sum by (pod, thread_name) (increase(envoy_server_watchdog_miss{pod=~"$pod", thread_name=~"worker_.*"}[5m]))`, "miss {{pod}} {{thread_name}}"),
			q(`sum by (pod, thread_name) (increase(envoy_server_watchdog_mega_miss{pod=~"$pod", thread_name=~"worker_.*"}[5m]))`, "mega miss {{pod}} {{thread_name}}"),
		}},
	{Title: "Worker busy ratio (local emulated pool)", Unit: "percentunit", LocalOnly: true,
		Description: "The emulator's per-worker busy time. On a real gateway the event-loop panels above are Envoy's own measure of it, with dispatcher stats on.",
		Targets:     []Target{q(`rate(envoy_igwlab_worker_busy_ns{pod=~"$pod"}[1m]) / 1e9`, "{{pod}} worker {{worker}}")}},
}

// loopSeries selects every worker's loop_duration_us series of one suffix, with the worker,
// which Istio leaves in the name, as a label.
func loopSeries(suffix string) string {
	name := "envoy_listener_manager_worker_([0-9]+)_dispatcher_loop_duration_us" + suffix
	return `label_replace({__name__=~"` + strings.Replace(name, "([0-9]+)", "[0-9]+", 1) + `", pod=~"$pod"}, "worker", "$1", "__name__", "` + name + `")`
}

// Variable is one of the dashboard's template variables besides the data source: either a
// free regex over pod names (Regex) or a Grafana label_values query over Selector.
type Variable struct {
	Name, Label, Default string
	Regex                bool
	Selector, LabelName  string
}

// Variables are the dashboard's template variables with the real lab's defaults: the Helm
// gateway chart listens on 80, so its HCM prefix and listener name carry 80, not 8080.
var Variables = []Variable{
	{Name: "pod", Label: "Gateway pods (regex)", Default: "istio-ingressgateway-.*", Regex: true},
	{Name: "ztunnel", Label: "ztunnel pods (regex)", Default: "ztunnel-.*", Regex: true},
	{Name: "hcm", Label: "HCM prefix", Default: "outbound_0.0.0.0_80",
		Selector: `envoy_http_downstream_cx_total{http_conn_manager_prefix=~"outbound_.*"}`, LabelName: "http_conn_manager_prefix"},
	{Name: "listener", Label: "Listener", Default: "0.0.0.0_80",
		Selector: `envoy_listener_downstream_cx_total`, LabelName: "listener_address"},
	{Name: "cluster", Label: "Upstream cluster", Default: "outbound|8080||httpbin.igw-test.svc.cluster.local",
		Selector: `envoy_cluster_upstream_rq_total`, LabelName: "cluster_name"},
}

// Defaults returns the variables' default values by name.
func Defaults() map[string]string {
	m := map[string]string{}
	for _, v := range Variables {
		m[v.Name] = v.Default
	}
	return m
}

// Expand substitutes template variables into a query, for evaluating it without Grafana.
// Longer names go first so that a variable never clobbers another it is a prefix of.
func Expand(expr string, vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) > len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	for _, k := range names {
		expr = strings.ReplaceAll(expr, "$"+k, vars[k])
	}
	return expr
}

// Queries returns every query of every panel, labelled with its panel.
func Queries() []struct{ Panel, Expr string } { return queries(true) }

// EnvoyQueries leaves out the panels whose metrics come from the cluster, not from Envoy:
// the ones the local pool can answer.
func EnvoyQueries() []struct{ Panel, Expr string } { return queries(false) }

func queries(cluster bool) []struct{ Panel, Expr string } {
	var out []struct{ Panel, Expr string }
	for _, p := range Panels {
		if p.ClusterOnly && !cluster {
			continue
		}
		for _, t := range p.Targets {
			out = append(out, struct{ Panel, Expr string }{p.Title, t.Expr})
		}
	}
	return out
}
