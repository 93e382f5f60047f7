package model

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/igwlab/igwlab/stacks"
)

// What a pod's Envoy admin renders of its stats and listener, the same for the socket
// emulator's pods (served over HTTP) and the simulator's (rendered in process).

// quantiles Envoy's admin prints for each histogram.
var AdminQuantiles = []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1}

// WriteStats renders /stats: the stats matching filter (nil: all), skipping counters and gauges
// at zero when usedOnly, as text or (asJSON) as Envoy's JSON form.
func WriteStats(w http.ResponseWriter, st *Store, filter *regexp.Regexp, usedOnly, asJSON bool) {
	var stats []*Stat
	for _, s := range st.All() {
		if filter != nil && !filter.MatchString(s.Name) {
			continue
		}
		if usedOnly && s.Kind != Hist && s.Value() == 0 {
			continue
		}
		stats = append(stats, s)
	}
	if asJSON {
		writeStatsJSON(w, stats)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	for _, s := range stats {
		if s.Kind == Hist {
			fmt.Fprintf(w, "%s: %s\n", s.Name, histSummary(s.h))
			continue
		}
		fmt.Fprintf(w, "%s: %d\n", s.Name, s.Value())
	}
}

func histSummary(h *histogram) string {
	_, count, _ := h.snapshot()
	if count == 0 {
		return "No recorded values"
	}
	parts := make([]string, len(AdminQuantiles))
	for i, q := range AdminQuantiles {
		parts[i] = fmt.Sprintf("P%s(nan,%s)", strconv.FormatFloat(q*100, 'f', -1, 64), fmtFloat(h.quantile(q)))
	}
	return strings.Join(parts, " ")
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) {
		return "nan"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func writeStatsJSON(w http.ResponseWriter, stats []*Stat) {
	type q struct {
		Interval   *float64 `json:"interval"`
		Cumulative float64  `json:"cumulative"`
	}
	type hq struct {
		Name   string `json:"name"`
		Values []q    `json:"values"`
	}
	var out []any
	var hists []hq
	for _, s := range stats {
		if s.Kind == Hist {
			vals := make([]q, len(AdminQuantiles))
			for i, qq := range AdminQuantiles {
				v := s.h.quantile(qq)
				if math.IsNaN(v) {
					v = 0
				}
				vals[i] = q{Cumulative: v}
			}
			hists = append(hists, hq{Name: s.Name, Values: vals})
			continue
		}
		out = append(out, map[string]any{"name": s.Name, "value": s.Value()})
	}
	sq := make([]float64, len(AdminQuantiles))
	for i, v := range AdminQuantiles {
		sq[i] = v * 100
	}
	out = append(out, map[string]any{"histograms": map[string]any{"supported_quantiles": sq, "computed_quantiles": hists}})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"stats": out})
}

// ConfigDump is the listener in force as Envoy's /config_dump shows it: the knobs in force,
// written from the registry as an EnvoyFilter writes them, merged into the listener and its
// HTTP connection manager.
func ConfigDump(c *Listener, listener, prefix string) map[string]any {
	httpFilters := []any{}
	if c.Filters.JWT != nil {
		httpFilters = append(httpFilters, map[string]any{"name": "envoy.filters.http.jwt_authn"})
	}
	httpFilters = append(httpFilters, map[string]any{"name": "envoy.filters.http.router"})
	hcm := c.Knobs.Envoy("hcm.")
	hcm["@type"] = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	hcm["stat_prefix"] = prefix
	hcm["http_filters"] = httpFilters
	if c.Push > 0 {
		hcm["tracing"] = stacks.PushTracing(c.Push)
	}
	if al := c.Filters.AccessLog; al != nil {
		hcm["access_log"] = []any{map[string]any{"name": "envoy.access_loggers.file",
			"filter": map[string]any{"response_flag_filter": map[string]any{"flags": al.ResponseFlags}}}}
	}
	host, port, _ := strings.Cut(listener, "_")
	pv, _ := strconv.Atoi(port)
	l := c.Knobs.Envoy("listener.")
	l["@type"] = "type.googleapis.com/envoy.config.listener.v3.Listener"
	l["name"] = listener
	l["address"] = map[string]any{"socket_address": map[string]any{"address": host, "port_value": pv}}
	l["filter_chains"] = []any{map[string]any{"filters": []any{map[string]any{
		"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}}}}
	return map[string]any{"configs": []any{map[string]any{
		"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
		"dynamic_listeners": []any{map[string]any{"name": listener,
			"active_state": map[string]any{"version_info": strconv.Itoa(c.Generation), "listener": l}}},
	}}}
}

// PromCollector exports a pod's stats as Istio's Envoy does on /stats/prometheus.
type PromCollector struct{ Store *Store }

// Describe implements prometheus.Collector.
func (PromCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: the stat set grows at run time

// Collect implements prometheus.Collector.
func (c PromCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.Store.All() {
		names := make([]string, len(s.Labels))
		vals := make([]string, len(s.Labels))
		for i, l := range s.Labels {
			names[i], vals[i] = l.Name, l.Value
		}
		desc := prometheus.NewDesc(PromName(s.Tagged), "", names, nil)
		switch s.Kind {
		case Counter:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(s.Value()), vals...)
		case Gauge:
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(s.Value()), vals...)
		case Hist:
			cum, count, sum := s.h.snapshot()
			buckets := make(map[float64]uint64, len(cum))
			for i, b := range envoyBuckets {
				buckets[b] = cum[i]
			}
			ch <- prometheus.MustNewConstHistogram(desc, count, sum, buckets, vals...)
		}
	}
}
