package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/igwlab/igwlab/runner/model"
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
	reg.MustRegister(model.PromCollector{Store: p.store})
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
	model.WriteStats(w, p.store, filter, usedOnly, r.URL.Query().Get("format") == "json")
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
		}{{"cx_active", c.CxActive}, {"cx_connect_fail", c.CxConnectFail}, {"cx_total", c.CxTotal},
			{"rq_active", c.RqActive}, {"rq_total", c.RqTotal}} {
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
	_ = enc.Encode(model.ConfigDump(p.cfg.Load(), p.listenerAddr, p.hcmPrefix))
}
