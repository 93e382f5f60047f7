package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/igwlab/igwlab/stacks"
)

// adminServer is a pod's Envoy admin endpoint (Istio's :15000, with :15090's /stats/prometheus).
type adminServer struct {
	srv *http.Server
	ln  net.Listener
}

// startAdmin serves the admin API on the pod's address; port 0 picks one.
func (p *Pod) startAdmin(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("pod %s admin: %w", p.Name, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(promCollector{p})
	mux := http.NewServeMux()
	mux.Handle("GET /stats/prometheus", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /stats", p.serveStats)
	mux.HandleFunc("GET /server_info", p.serveServerInfo)
	mux.HandleFunc("GET /listeners", p.serveListeners)
	mux.HandleFunc("GET /clusters", p.serveClusters)
	mux.HandleFunc("GET /config_dump", p.serveConfigDump)
	mux.HandleFunc("POST /reset_counters", func(w http.ResponseWriter, _ *http.Request) {
		p.store.ResetCounters()
		fmt.Fprintln(w, "OK")
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		draining := !p.up || p.terminating
		p.mu.Unlock()
		if draining {
			http.Error(w, "DRAINING", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "LIVE")
	})
	a := &adminServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	p.mu.Lock()
	p.admin, p.adminPort = a, ln.Addr().(*net.TCPAddr).Port
	p.mu.Unlock()
	go func() { _ = a.srv.Serve(ln) }()
	return nil
}

func (p *Pod) stopAdmin() {
	p.mu.Lock()
	a := p.admin
	p.admin = nil
	p.mu.Unlock()
	if a != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = a.srv.Shutdown(ctx)
	}
}

// quantiles Envoy's admin prints for each histogram.
var adminQuantiles = []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1}

func (p *Pod) serveStats(w http.ResponseWriter, r *http.Request) {
	var filter *regexp.Regexp
	if f := r.URL.Query().Get("filter"); f != "" {
		re, err := regexp.Compile(f)
		if err != nil {
			http.Error(w, "Invalid re2 regex", http.StatusBadRequest)
			return
		}
		filter = re
	}
	_, usedOnly := r.URL.Query()["usedonly"]
	var stats []*Stat
	for _, s := range p.store.All() {
		if filter != nil && !filter.MatchString(s.Name) {
			continue
		}
		if usedOnly && s.Kind != Hist && s.Value() == 0 {
			continue
		}
		stats = append(stats, s)
	}
	if r.URL.Query().Get("format") == "json" {
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
	parts := make([]string, len(adminQuantiles))
	for i, q := range adminQuantiles {
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
			vals := make([]q, len(adminQuantiles))
			for i, qq := range adminQuantiles {
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
	sq := make([]float64, len(adminQuantiles))
	for i, v := range adminQuantiles {
		sq[i] = v * 100
	}
	out = append(out, map[string]any{"histograms": map[string]any{"supported_quantiles": sq, "computed_quantiles": hists}})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"stats": out})
}

func (p *Pod) serveServerInfo(w http.ResponseWriter, _ *http.Request) {
	state := "LIVE"
	if !p.Up() {
		state = "DRAINING"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"version":              "igwlab-emulator (models Envoy 1.35 / Istio 1.27)",
		"state":                state,
		"hot_restart_version":  "disabled",
		"command_line_options": map[string]any{"concurrency": len(p.workers)},
		"node":                 map[string]any{"id": "router~" + p.ip + "~" + p.Name + ".istio-system~istio-system.svc.cluster.local"},
		"uptime_current_epoch": fmt.Sprintf("%ds", int(time.Since(p.started).Seconds())),
	})
}

func (p *Pod) serveListeners(w http.ResponseWriter, r *http.Request) {
	addr := p.Addr()
	if r.URL.Query().Get("format") == "json" {
		host, port, _ := net.SplitHostPort(addr)
		pv, _ := strconv.Atoi(port)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"listener_statuses": []any{map[string]any{
			"name": p.listenerAddr,
			"local_address": map[string]any{"socket_address": map[string]any{
				"address": host, "port_value": pv}},
		}}})
		return
	}
	fmt.Fprintf(w, "%s::%s\n", p.listenerAddr, addr)
}

func (p *Pod) serveClusters(w http.ResponseWriter, _ *http.Request) {
	names := slices.Sorted(maps.Keys(p.clusters))
	for _, k := range names {
		c := p.clusters[k]
		fmt.Fprintf(w, "%s::observability_name::%s\n", c.name, c.name)
		fmt.Fprintf(w, "%s::default_priority::max_connections::4294967295\n", c.name)
		fmt.Fprintf(w, "%s::default_priority::max_pending_requests::4294967295\n", c.name)
		fmt.Fprintf(w, "%s::default_priority::max_requests::4294967295\n", c.name)
		for _, kv := range []struct {
			n string
			s *Stat
		}{{"cx_active", c.cxActive}, {"cx_connect_fail", c.cxConnectFail}, {"cx_total", c.cxTotal},
			{"rq_active", c.rqActive}, {"rq_total", c.rqTotal}} {
			fmt.Fprintf(w, "%s::%s::%s::%d\n", c.name, c.addr, kv.n, kv.s.Value())
		}
		fmt.Fprintf(w, "%s::%s::health_flags::healthy\n", c.name, c.addr)
	}
}

// serveConfigDump renders the listener in force the way Envoy's /config_dump does, so the
// runner checks "is the new config in effect" the same way on both targets.
func (p *Pod) serveConfigDump(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(configDump(p.cfg.Load(), p.listenerAddr, p.hcmPrefix))
}

// configDump is the listener in force as Envoy's /config_dump shows it: the knobs in force,
// written from the registry as an EnvoyFilter writes them, merged into the listener and its
// HTTP connection manager.
func configDump(c *listenerConfig, listener, prefix string) map[string]any {
	httpFilters := []any{}
	if c.filters.JWT != nil {
		httpFilters = append(httpFilters, map[string]any{"name": "envoy.filters.http.jwt_authn"})
	}
	httpFilters = append(httpFilters, map[string]any{"name": "envoy.filters.http.router"})
	hcm := c.knobs.Envoy("hcm.")
	hcm["@type"] = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	hcm["stat_prefix"] = prefix
	hcm["http_filters"] = httpFilters
	if c.push > 0 {
		hcm["tracing"] = stacks.PushTracing(c.push)
	}
	if al := c.filters.AccessLog; al != nil {
		hcm["access_log"] = []any{map[string]any{"name": "envoy.access_loggers.file",
			"filter": map[string]any{"response_flag_filter": map[string]any{"flags": al.ResponseFlags}}}}
	}
	host, port, _ := strings.Cut(listener, "_")
	pv, _ := strconv.Atoi(port)
	l := c.knobs.Envoy("listener.")
	l["@type"] = "type.googleapis.com/envoy.config.listener.v3.Listener"
	l["name"] = listener
	l["address"] = map[string]any{"socket_address": map[string]any{"address": host, "port_value": pv}}
	l["filter_chains"] = []any{map[string]any{"filters": []any{map[string]any{
		"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}}}}
	return map[string]any{"configs": []any{map[string]any{
		"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
		"dynamic_listeners": []any{map[string]any{"name": listener,
			"active_state": map[string]any{"version_info": strconv.Itoa(c.generation), "listener": l}}},
	}}}
}

// promCollector exports a pod's stats as Istio's Envoy does on /stats/prometheus.
type promCollector struct{ p *Pod }

func (promCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: the stat set grows at run time

func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.p.store.All() {
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
