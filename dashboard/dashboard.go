// Package dashboard generates the lab's Grafana dashboard. Every panel is a row of the lab's
// metric table, and every query is written once, here, against template variables, so the
// same dashboard fits the Istio gateway chart (listener on 80), the old istioctl gateway
// (8080), any upstream cluster and the local emulated pool.
package dashboard

import (
	"encoding/json"
	"sort"
	"strings"
)

// UID is the dashboard's stable identifier.
const UID = "igw-thread-concentration"

// Title is the dashboard's title.
const Title = "IGW Thread Concentration"

// Target is one query of a panel.
type Target struct {
	Expr   string `json:"expr"`
	Legend string `json:"legendFormat"`
	RefID  string `json:"refId"`
}

// Panel is one time-series panel.
type Panel struct {
	Title       string
	Description string
	Unit        string
	Targets     []Target
	// LocalOnly marks a panel whose metric only the local emulator exports.
	LocalOnly bool
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
	{Title: "Worker busy ratio (local emulated pool)", Unit: "percentunit", LocalOnly: true,
		Description: "The emulator's per-worker busy time. On a real gateway use per-thread CPU instead; Envoy does not export it.",
		Targets:     []Target{q(`rate(envoy_igwlab_worker_busy_ns{pod=~"$pod"}[1m]) / 1e9`, "{{pod}} worker {{worker}}")}},
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

// JSON renders the dashboard.
func JSON() ([]byte, error) {
	var panels []map[string]any
	for i, p := range Panels {
		targets := make([]map[string]any, len(p.Targets))
		for j, t := range p.Targets {
			targets[j] = map[string]any{"expr": t.Expr, "legendFormat": t.Legend, "refId": string(rune('A' + j)),
				"datasource": map[string]any{"type": "prometheus", "uid": "${datasource}"}}
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": "timeseries", "title": p.Title, "description": p.Description,
			"datasource":  map[string]any{"type": "prometheus", "uid": "${datasource}"},
			"gridPos":     map[string]any{"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i / 2)},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
			"options":     map[string]any{"legend": map[string]any{"displayMode": "list", "placement": "bottom"}},
			"targets":     targets,
		})
	}
	vars := []any{map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
		"current": map[string]any{"text": "Prometheus", "value": "prometheus"}}}
	for _, v := range Variables {
		cur := map[string]any{"text": v.Default, "value": v.Default}
		if v.Regex {
			vars = append(vars, map[string]any{"name": v.Name, "label": v.Label, "type": "textbox", "query": v.Default, "current": cur})
			continue
		}
		vars = append(vars, map[string]any{"name": v.Name, "label": v.Label, "type": "query", "refresh": 2,
			"datasource": map[string]any{"type": "prometheus", "uid": "${datasource}"},
			"query":      map[string]any{"query": "label_values(" + v.Selector + ", " + v.LabelName + ")", "refId": "var-" + v.Name},
			"current":    cur, "includeAll": false, "multi": false})
	}
	d := map[string]any{
		"uid": UID, "title": Title, "tags": []string{"istio", "envoy", "igwlab"},
		"timezone": "browser", "schemaVersion": 39, "refresh": "5s", "editable": true,
		"time":        map[string]any{"from": "now-15m", "to": "now"},
		"description": "Thread concentration on an Istio ingress gateway: distribution across pods and workers, rotation, flow control.",
		"templating":  map[string]any{"list": vars},
		"panels":      panels,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
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
func Queries() []struct{ Panel, Expr string } {
	var out []struct{ Panel, Expr string }
	for _, p := range Panels {
		for _, t := range p.Targets {
			out = append(out, struct{ Panel, Expr string }{p.Title, t.Expr})
		}
	}
	return out
}
