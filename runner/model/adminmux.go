package model

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminView is what a pod's Envoy admin shows of it: the socket emulator serves it on a port,
// the simulator answers it in process; both through Admin, so a page reads the same on each.
type AdminView struct {
	Name, IP string
	Store    *Store
	// Listener is the listener in force, named and prefixed as Istio's (0.0.0.0_80,
	// outbound_0.0.0.0_80).
	Listener             func() *Listener
	ListenerName, Prefix string
	// Addr is where the listener listens (host:port).
	Addr    func() string
	Workers int
	// Started and Now give the uptime; Draining is true once the pod is told to terminate or its
	// container is down.
	Started  time.Time
	Now      func() time.Time
	Draining func() bool
	Clusters func() []ClusterView
	// Version is the server's version string.
	Version string
}

// ClusterView is one upstream cluster as /clusters lists it.
type ClusterView struct {
	Name, Addr string
	Stats      *ClusterStats
}

// Admin serves a pod's admin API: /stats/prometheus (Istio's :15090 page), /stats (text and
// json, filter and usedonly), /server_info, /listeners, /clusters, /config_dump, /ready and
// POST /reset_counters, as Envoy's admin renders them (source/server/admin).
func Admin(v AdminView) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(PromCollector{Store: v.Store})
	mux := http.NewServeMux()
	mux.Handle("GET /stats/prometheus", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
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
		WriteStats(w, v.Store, filter, usedOnly, r.URL.Query().Get("format") == "json")
	})
	mux.HandleFunc("GET /server_info", func(w http.ResponseWriter, _ *http.Request) {
		state := "LIVE"
		if v.Draining() {
			state = "DRAINING"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"version":              v.Version,
			"state":                state,
			"hot_restart_version":  "disabled",
			"command_line_options": map[string]any{"concurrency": v.Workers},
			"node":                 map[string]any{"id": "router~" + v.IP + "~" + v.Name + ".istio-system~istio-system.svc.cluster.local"},
			"uptime_current_epoch": fmt.Sprintf("%ds", int(v.Now().Sub(v.Started).Seconds())),
		})
	})
	mux.HandleFunc("GET /listeners", func(w http.ResponseWriter, r *http.Request) {
		addr := v.Addr()
		if r.URL.Query().Get("format") == "json" {
			host, port, _ := net.SplitHostPort(addr)
			pv, _ := strconv.Atoi(port)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"listener_statuses": []any{map[string]any{
				"name":          v.ListenerName,
				"local_address": map[string]any{"socket_address": map[string]any{"address": host, "port_value": pv}},
			}}})
			return
		}
		fmt.Fprintf(w, "%s::%s\n", v.ListenerName, addr)
	})
	mux.HandleFunc("GET /clusters", func(w http.ResponseWriter, _ *http.Request) {
		for _, c := range v.Clusters() {
			fmt.Fprintf(w, "%s::observability_name::%s\n", c.Name, c.Name)
			fmt.Fprintf(w, "%s::default_priority::max_connections::4294967295\n", c.Name)
			fmt.Fprintf(w, "%s::default_priority::max_pending_requests::4294967295\n", c.Name)
			fmt.Fprintf(w, "%s::default_priority::max_requests::4294967295\n", c.Name)
			s := c.Stats
			for _, kv := range []struct {
				n string
				s *Stat
			}{{"cx_active", s.CxActive}, {"cx_connect_fail", s.CxConnectFail}, {"cx_total", s.CxTotal},
				{"rq_active", s.RqActive}, {"rq_total", s.RqTotal}} {
				fmt.Fprintf(w, "%s::%s::%s::%d\n", c.Name, c.Addr, kv.n, kv.s.Value())
			}
			fmt.Fprintf(w, "%s::%s::health_flags::healthy\n", c.Name, c.Addr)
		}
	})
	// The listener in force the way Envoy's /config_dump shows it, so the runner checks "is the
	// new config in effect" the same way on every target.
	mux.HandleFunc("GET /config_dump", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(ConfigDump(v.Listener(), v.ListenerName, v.Prefix))
	})
	mux.HandleFunc("POST /reset_counters", func(w http.ResponseWriter, _ *http.Request) {
		v.Store.ResetCounters()
		fmt.Fprintln(w, "OK")
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if v.Draining() {
			http.Error(w, "DRAINING", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "LIVE")
	})
	return mux
}
