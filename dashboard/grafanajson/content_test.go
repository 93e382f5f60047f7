package grafanajson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	grafana "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The dashboard as a reader sees it, whatever JSON shape carries it: the golden file pins the
// bytes, this pins the content, so a change of generator (or of Grafana schema) can rewrite the
// golden file only when the panels, queries, units and variables stay what they were.
type (
	wantPanel struct {
		Title, Type, Unit, Description string
		Targets                        []wantTarget
	}
	wantTarget   struct{ Expr, Legend string }
	wantVariable struct{ Name, Type, Label, Query, Current string }
)

// wantPanels and wantVariables were read from the hand-built dashboard's golden file; the
// queries are spelled out here, not composed from the package's selectors, so a change to a
// selector shows as a failure.
var wantPanels = []wantPanel{
	{"CV of active connections across gateway pods (leading indicator)", "timeseries", "none", "stddev/mean of downstream_cx_active across pods. 0 is even; sqrt(n-1) is everything on one pod. It rises before p99 does.", []wantTarget{
		{`stddev(envoy_http_downstream_cx_active{http_conn_manager_prefix="$hcm", pod=~"$pod"}) / avg(envoy_http_downstream_cx_active{http_conn_manager_prefix="$hcm", pod=~"$pod"})`, "CV"},
	}},
	{"Active connections per pod", "timeseries", "none", "The hotspot itself: a few pods holding the connections, the rest at zero.", []wantTarget{
		{`sum by (pod) (envoy_http_downstream_cx_active{http_conn_manager_prefix="$hcm", pod=~"$pod"})`, "{{pod}}"},
	}},
	{"HTTP/2 connections opened per pod", "timeseries", "none", "downstream_cx_http2_total: a counter, so it keeps the distribution after the connections close.", []wantTarget{
		{`sum by (pod) (envoy_http_downstream_cx_http2_total{http_conn_manager_prefix="$hcm", pod=~"$pod"})`, "{{pod}}"},
	}},
	{"Request rate per pod", "timeseries", "reqps", "Where the work goes; with rotation it moves from pod to pod over time.", []wantTarget{
		{`sum by (pod) (rate(envoy_http_downstream_rq_total{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "{{pod}}"},
	}},
	{"Active requests and multiplexing depth per pod", "timeseries", "none", "downstream_rq_active, and requests per active connection: how many streams share one thread's connection.", []wantTarget{
		{`sum by (pod) (envoy_http_downstream_rq_active{http_conn_manager_prefix="$hcm", pod=~"$pod"})`, "active {{pod}}"},
		{`sum by (pod) (envoy_http_downstream_rq_active{http_conn_manager_prefix="$hcm", pod=~"$pod"}) / clamp_min(sum by (pod) (envoy_http_downstream_cx_active{http_conn_manager_prefix="$hcm", pod=~"$pod"}), 1)`, "per connection {{pod}}"},
	}},
	{"Request latency at the gateway (p50, p95, p99)", "timeseries", "ms", "From downstream_rq_time, per request; downstream_cx_length_ms only updates when a connection closes.", []wantTarget{
		{`histogram_quantile(0.50, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m])))`, "p50"},
		{`histogram_quantile(0.95, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m])))`, "p95"},
		{`histogram_quantile(0.99, sum by (le) (rate(envoy_http_downstream_rq_time_bucket{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m])))`, "p99"},
	}},
	{"GOAWAY rotations: by duration and by request count", "timeseries", "ops", "max_connection_duration and max_requests_per_connection firing. max_requests_reached counts requests at or over the limit, not connections.", []wantTarget{
		{`sum by (pod) (rate(envoy_http_downstream_cx_max_duration_reached{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "duration {{pod}}"},
		{`sum by (pod) (rate(envoy_http_downstream_cx_max_requests_reached{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "requests {{pod}}"},
	}},
	{"Idle timeouts", "timeseries", "ops", "stream_idle_timeout (rq) and idle_timeout (cx) firings.", []wantTarget{
		{`sum(rate(envoy_http_downstream_rq_idle_timeout{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "stream idle"},
		{`sum(rate(envoy_http_downstream_cx_idle_timeout{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "connection idle"},
	}},
	{"Upstream flow-control pauses", "timeseries", "ops", "The gateway stopped reading the upstream because a downstream buffer was over its watermark.", []wantTarget{
		{`sum by (pod) (rate(envoy_cluster_upstream_flow_control_paused_reading_total{cluster_name="$cluster", pod=~"$pod"}[1m]))`, "paused {{pod}}"},
		{`sum by (pod) (rate(envoy_cluster_upstream_flow_control_resumed_reading_total{cluster_name="$cluster", pod=~"$pod"}[1m]))`, "resumed {{pod}}"},
	}},
	{"Upstream pool: pending requests and overflows", "timeseries", "none", "Requests waiting for an upstream connection; overflows mean a circuit breaker rejected work.", []wantTarget{
		{`sum by (pod) (envoy_cluster_upstream_rq_pending_active{cluster_name="$cluster", pod=~"$pod"})`, "pending {{pod}}"},
		{`sum(rate(envoy_cluster_upstream_rq_pending_overflow{cluster_name="$cluster", pod=~"$pod"}[1m]))`, "pending overflow"},
		{`sum(rate(envoy_cluster_upstream_cx_overflow{cluster_name="$cluster", pod=~"$pod"}[1m]))`, "connection overflow"},
	}},
	{"Upstream bytes buffered", "timeseries", "bytes", "Read and write buffers of the upstream connections; per_connection_buffer_limit_bytes bounds them.", []wantTarget{
		{`sum by (pod) (envoy_cluster_upstream_cx_rx_bytes_buffered{cluster_name="$cluster", pod=~"$pod"})`, "rx {{pod}}"},
		{`sum by (pod) (envoy_cluster_upstream_cx_tx_bytes_buffered{cluster_name="$cluster", pod=~"$pod"})`, "tx {{pod}}"},
	}},
	{"Connections per worker", "timeseries", "none", "listener.<address>.worker_N.downstream_cx_active: the threads themselves.", []wantTarget{
		{`label_replace({__name__=~"envoy_listener_worker_[0-9]+_downstream_cx_active", listener_address="$listener", pod=~"$pod"}, "worker", "$1", "__name__", "envoy_listener_worker_([0-9]+)_downstream_cx_active")`, "{{pod}} worker {{worker}}"},
	}},
	{"CV across the workers of each pod (H-E)", "timeseries", "none", "Within-pod balance; only meaningful with concurrency >= 2. exact_balance drives it toward 0.", []wantTarget{
		{`stddev by (pod) ({__name__=~"envoy_listener_worker_[0-9]+_downstream_cx_active", listener_address="$listener", pod=~"$pod"}) / avg by (pod) ({__name__=~"envoy_listener_worker_[0-9]+_downstream_cx_active", listener_address="$listener", pod=~"$pod"})`, "{{pod}}"},
	}},
	{"ztunnel: TCP connections opened per node", "timeseries", "ops", "Ambient's node proxies in front of the backends: uneven rates mean the concentration reaches past the gateway.", []wantTarget{
		{`sum by (pod) (rate(istio_tcp_connections_opened_total{pod=~"$ztunnel"}[1m]))`, "{{pod}}"},
	}},
	{"ztunnel: bytes sent and received per node", "timeseries", "Bps", "Bytes through each ztunnel, seen from the destination.", []wantTarget{
		{`sum by (pod) (rate(istio_tcp_sent_bytes_total{pod=~"$ztunnel"}[1m]))`, "sent {{pod}}"},
		{`sum by (pod) (rate(istio_tcp_received_bytes_total{pod=~"$ztunnel"}[1m]))`, "received {{pod}}"},
	}},
	{"TLS handshakes per pod", "timeseries", "ops", "Every rotation costs a handshake on a TLS listener: the CPU price of rotating connections.", []wantTarget{
		{`sum by (pod) (rate(envoy_listener_ssl_handshake{listener_address="$listener", pod=~"$pod"}[1m]))`, "{{pod}}"},
	}},
	{"Share of the pool's requests per pod (scale-out, rollouts)", "timeseries", "percentunit", "Each pod's share of the gateway's requests. After a scale-out or a rollout a pod that turned ready and stays near 0 is one the long-lived connections never reached: the Service only places new connections. Rotation (max_requests_per_connection) moves them.", []wantTarget{
		{`sum by (pod) (rate(envoy_http_downstream_rq_total{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m])) / scalar(sum(rate(envoy_http_downstream_rq_total{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m])))`, "{{pod}}"},
	}},
	{"Gateway pod uptime", "timeseries", "s", "server.uptime: read with the share panel, a young pod with a small share is waiting for connections to move to it.", []wantTarget{
		{`max by (pod) (envoy_server_uptime{pod=~"$pod"})`, "{{pod}}"},
	}},
	{"CPU against request: what the HPA sees", "timeseries", "percentunit", "The pool's CPU usage over its CPU request, the HPA's metric (80% is the gateway chart's target). It can sit far below the target while one worker is pegged: the HPA never scales. From cAdvisor and kube-state-metrics (kube-prometheus-stack).", []wantTarget{
		{`sum(rate(container_cpu_usage_seconds_total{pod=~"$pod", container="istio-proxy"}[1m])) / sum(kube_pod_container_resource_requests{pod=~"$pod", container="istio-proxy", resource="cpu"})`, "utilisation"},
	}},
	{"CPU throttling per gateway pod (CFS)", "timeseries", "percentunit", "The share of each pod's CFS periods at whose end the kernel still held a thread of its proxy back: more Envoy workers than its CPU limit's cores, busy together, spend each 100 ms period's quota early and all wait for the next (scenario 21). From cAdvisor (kube-prometheus-stack's kubelet job); absent for a container with no CPU limit.", []wantTarget{
		{`sum by (pod) (rate(container_cpu_cfs_throttled_periods_total{pod=~"$pod", container="istio-proxy"}[1m])) / sum by (pod) (rate(container_cpu_cfs_periods_total{pod=~"$pod", container="istio-proxy"}[1m]))`, "{{pod}}"},
	}},
	{"Streams in flight and streams max_stream_duration ended", "timeseries", "none", "downstream_rq_active per pod: long-lived streams (gRPC watches, event streams) hold their connection, and a drain cannot move them; downstream_rq_max_duration_reached: streams max_stream_duration ended, whose successors a rotation then moves.", []wantTarget{
		{`sum by (pod) (envoy_http_downstream_rq_active{http_conn_manager_prefix="$hcm", pod=~"$pod"})`, "in flight {{pod}}"},
		{`sum by (pod) (rate(envoy_http_downstream_rq_max_duration_reached{http_conn_manager_prefix="$hcm", pod=~"$pod"}[1m]))`, "ended {{pod}}"},
	}},
	{"Worker event loop: share of time in callbacks (dispatcher stats)", "timeseries", "percentunit", "Envoy's own measure of a worker's busy time: the sum of its event loop's iterations (listener_manager.worker_N.dispatcher.loop_duration_us, each from the poll's return to the next poll) per second. Near 100% the worker never waits for I/O: it is pegged. Needs the bootstrap's enable_dispatcher_stats (the lab turns it on with Istio's bootstrap override).", []wantTarget{
		{`rate(label_replace({__name__=~"envoy_listener_manager_worker_[0-9]+_dispatcher_loop_duration_us_sum", pod=~"$pod"}, "worker", "$1", "__name__", "envoy_listener_manager_worker_([0-9]+)_dispatcher_loop_duration_us_sum")[1m:5s]) / 1e6`, "{{pod}} worker {{worker}}"},
	}},
	{"Worker event loop iterations, p99 (dispatcher stats)", "timeseries", "ms", "How long one pass of each worker's loop takes: everything that was ready when its poll returned. A saturated worker's iterations grow with its backlog, an idle one's stay near zero. Poll delay, the loop's other histogram, shows the kernel or the CPU limit holding a thread back, not a busy loop.", []wantTarget{
		{`histogram_quantile(0.99, sum by (pod, worker, le) (rate(label_replace({__name__=~"envoy_listener_manager_worker_[0-9]+_dispatcher_loop_duration_us_bucket", pod=~"$pod"}, "worker", "$1", "__name__", "envoy_listener_manager_worker_([0-9]+)_dispatcher_loop_duration_us_bucket")[1m:5s]))) / 1000`, "{{pod}} worker {{worker}}"},
	}},
	{"Watchdog misses per worker", "timeseries", "none", "server.worker_N.watchdog_miss (mega_miss): the guard dog found the worker's loop untouched for a whole check interval (200 ms, 1 s by default): one callback held the thread. On by default in every Envoy.", []wantTarget{
		{`sum by (pod, thread_name) (increase(envoy_server_watchdog_miss{pod=~"$pod", thread_name=~"worker_.*"}[5m]))`, "miss {{pod}} {{thread_name}}"},
		{`sum by (pod, thread_name) (increase(envoy_server_watchdog_mega_miss{pod=~"$pod", thread_name=~"worker_.*"}[5m]))`, "mega miss {{pod}} {{thread_name}}"},
	}},
	{"Worker busy ratio (local emulated pool)", "timeseries", "percentunit", "The emulator's per-worker busy time. On a real gateway the event-loop panels above are Envoy's own measure of it, with dispatcher stats on.", []wantTarget{
		{`rate(envoy_igwlab_worker_busy_ns{pod=~"$pod"}[1m]) / 1e9`, "{{pod}} worker {{worker}}"},
	}},
}

var wantVariables = []wantVariable{
	{"datasource", "datasource", "Data source", "prometheus", "prometheus"},
	{"pod", "textbox", "Gateway pods (regex)", "istio-ingressgateway-.*", "istio-ingressgateway-.*"},
	{"ztunnel", "textbox", "ztunnel pods (regex)", "ztunnel-.*", "ztunnel-.*"},
	{"hcm", "query", "HCM prefix", `label_values(envoy_http_downstream_cx_total{http_conn_manager_prefix=~"outbound_.*"}, http_conn_manager_prefix)`, "outbound_0.0.0.0_80"},
	{"listener", "query", "Listener", "label_values(envoy_listener_downstream_cx_total, listener_address)", "0.0.0.0_80"},
	{"cluster", "query", "Upstream cluster", "label_values(envoy_cluster_upstream_rq_total, cluster_name)", "outbound|8080||httpbin.igw-test.svc.cluster.local"},
}

// The Prometheus data source every panel, query and query variable must use: the datasource
// variable, so one dashboard serves whichever Prometheus Grafana is given.
var wantRef = ref{Type: "prometheus", UID: "${datasource}"}

type ref struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// board is the subset of Grafana's dashboard JSON that carries the content; both the
// hand-built maps and the SDK's model decode into it.
type board struct {
	UID, Title, Description, Refresh, Timezone string
	Editable                                   bool
	Tags                                       []string
	Time                                       struct{ From, To string }
	Panels                                     []struct {
		ID                       int
		Type, Title, Description string
		Datasource               ref
		GridPos                  struct{ H, W, X, Y int }
		FieldConfig              struct{ Defaults struct{ Unit string } }
		Options                  struct {
			Legend struct {
				DisplayMode, Placement string
				ShowLegend             *bool
			}
			Tooltip struct{ Mode, Sort *string }
		}
		Targets []struct {
			Expr, LegendFormat, RefID string
			Datasource                ref
		}
	}
	Templating struct {
		List []struct {
			Name, Type, Label string
			Query             json.RawMessage
			Current           struct{ Text, Value json.RawMessage }
			Datasource        *ref
			Refresh           int
			IncludeAll, Multi bool
		}
	}
}

func TestDashboardContentUnchanged(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var d board
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID != "igw-thread-concentration" || d.Title != "IGW Thread Concentration" ||
		d.Description != "Thread concentration on an Istio ingress gateway: distribution across pods and workers, rotation, flow control." ||
		d.Refresh != "5s" || d.Timezone != "browser" || !d.Editable || d.Time.From != "now-15m" || d.Time.To != "now" ||
		!reflect.DeepEqual(d.Tags, []string{"istio", "envoy", "igwlab"}) {
		t.Errorf("dashboard header: uid %q title %q refresh %q timezone %q editable %v time %v tags %q\n%s",
			d.UID, d.Title, d.Refresh, d.Timezone, d.Editable, d.Time, d.Tags, d.Description)
	}

	var panels []wantPanel
	for i, p := range d.Panels {
		got := wantPanel{Title: p.Title, Type: p.Type, Unit: p.FieldConfig.Defaults.Unit, Description: p.Description}
		// Two panels a row, each half the 24-column grid and 8 rows high, in table order.
		if p.ID != i+1 || p.GridPos != (struct{ H, W, X, Y int }{8, 12, 12 * (i % 2), 8 * (i / 2)}) {
			t.Errorf("panel %q: id %d, gridPos %+v", p.Title, p.ID, p.GridPos)
		}
		if p.Datasource != wantRef {
			t.Errorf("panel %q: datasource %+v", p.Title, p.Datasource)
		}
		if l := p.Options.Legend; l.DisplayMode != "list" || l.Placement != "bottom" || l.ShowLegend != nil && !*l.ShowLegend {
			t.Errorf("panel %q: legend %s at %s, showLegend %v", p.Title, l.DisplayMode, l.Placement, l.ShowLegend == nil || *l.ShowLegend)
		}
		// Absent, the tooltip takes Grafana's defaults; present, it must say them.
		if m, s := p.Options.Tooltip.Mode, p.Options.Tooltip.Sort; m != nil && *m != "single" || s != nil && *s != "none" {
			t.Errorf("panel %q: tooltip mode %v, sort %v", p.Title, deref(m), deref(s))
		}
		for j, q := range p.Targets {
			if q.RefID != string(rune('A'+j)) || q.Datasource != wantRef {
				t.Errorf("panel %q query %d: refId %q, datasource %+v", p.Title, j, q.RefID, q.Datasource)
			}
			got.Targets = append(got.Targets, wantTarget{q.Expr, q.LegendFormat})
		}
		panels = append(panels, got)
	}
	if !reflect.DeepEqual(panels, wantPanels) {
		t.Errorf("panels differ from the table:\n%s", diffPanels(panels, wantPanels))
	}

	var vars []wantVariable
	for _, v := range d.Templating.List {
		got := wantVariable{Name: v.Name, Type: v.Type, Label: v.Label, Query: text(t, v.Query, "query"), Current: text(t, v.Current.Value, "")}
		if c := text(t, v.Current.Text, ""); c != got.Current && !(v.Type == "datasource" && c == "Prometheus") {
			t.Errorf("variable %s: current text %q, value %q", v.Name, c, got.Current)
		}
		// Query variables ask the chosen data source again whenever the time range changes
		// (refresh 2), and offer one value at a time: every query compares with = or =~ one value.
		if v.Type == "query" && (v.Datasource == nil || *v.Datasource != wantRef || v.Refresh != 2 || v.IncludeAll || v.Multi) {
			t.Errorf("variable %s: datasource %v, refresh %d, includeAll %v, multi %v", v.Name, v.Datasource, v.Refresh, v.IncludeAll, v.Multi)
		}
		vars = append(vars, got)
	}
	if !reflect.DeepEqual(vars, wantVariables) {
		t.Errorf("variables differ from the table:\ngot  %q\nwant %q", vars, wantVariables)
	}
}

// TestDashboardReadsBackStrictly reads the dashboard with the SDK's strict decoder, which
// refuses a missing required field, a wrong type or a field Grafana's schema does not have; the
// broken copies show it looks inside the panels too.
func TestDashboardReadsBackStrictly(t *testing.T) {
	// Known to the decoder, a time series panel's options and a Prometheus query are checked
	// field by field; unknown, they would pass as opaque maps.
	rt := cog.NewRuntime()
	rt.RegisterPanelcfgVariant(timeseries.VariantConfig())
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := strict(b); err != nil {
		t.Fatalf("dashboard against Grafana's schema: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(d map[string]any)
		want  string
	}{
		{"unknown field", func(d map[string]any) { d["bogus"] = 1 }, "unexpected field 'bogus'"},
		{"unknown panel field", func(d map[string]any) { panel0(d)["bogus"] = 1 }, "unexpected field 'bogus'"},
		{"legend without showLegend", func(d map[string]any) {
			delete(panel0(d)["options"].(map[string]any)["legend"].(map[string]any), "showLegend")
		}, "showLegend: required field is missing"},
	} {
		var d map[string]any
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		tc.spoil(d)
		broken, _ := json.Marshal(d)
		if err := strict(broken); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func panel0(d map[string]any) map[string]any { return d["panels"].([]any)[0].(map[string]any) }

// strict runs the SDK's strict decoder for its verdict only. At v0.0.22 UnmarshalJSONStrict hands
// back its error list even when it is empty (a typed nil inside the error), so an empty list
// counts as success; the same slip drops every decoded panel, so the decoded value is not used.
func strict(raw []byte) error {
	var d grafana.Dashboard
	err := d.UnmarshalJSONStrict(raw)
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
		return nil
	}
	return err
}

// text reads a JSON string, or the string under key of a JSON object (a query variable keeps
// its query in an object, a textbox in a plain string).
func text(t *testing.T, raw json.RawMessage, key string) string {
	t.Helper()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]json.RawMessage
	if key != "" && json.Unmarshal(raw, &m) == nil && json.Unmarshal(m[key], &s) == nil {
		return s
	}
	t.Errorf("%s: neither a string nor an object with %q", raw, key)
	return ""
}

func deref(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return *s
}

// diffPanels names the first panels that differ, field by field, so a failure says what moved.
func diffPanels(got, want []wantPanel) string {
	out := fmt.Sprintf("%d panels, want %d\n", len(got), len(want))
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			out += fmt.Sprintf("panel %d:\n got  %+v\n want %+v\n", i+1, got[i], want[i])
		}
	}
	return out
}
