// Package diagnose looks at a live gateway pool, read-only, and says whether its load sits on
// few connections, pods and worker threads, whether that is more than chance, what the
// clients are likely doing, and which lever fits. It reads what an Istio gateway exposes
// (Envoy's stats as Istio names them, /config_dump) from Prometheus or from the pods' admin
// endpoints, never sends load, and says what it could not find instead of guessing.
package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// Window is what a source saw of the gateway pool over a span of time: each pod's stats at its
// start and end (counters as their increase when the source saw resets), the names the pool's
// stats go by, and what the source could not find.
type Window struct {
	Source     string        `json:"source"` // e.g. "prometheus http://...", "admin (3 endpoints)"
	Start, End time.Time     `json:"-"`
	Span       time.Duration `json:"-"`
	// Covered is the time the counters' increases cover where that is less than Span (a
	// Prometheus range read at its step: first sample to last); 0: Span.
	Covered time.Duration `json:"-"`
	Names   stats.Names   `json:"names"`
	Pods    []PodWindow   `json:"pods"`
	// InForce is what the gateway's /config_dump says is set (nil when the source has none).
	InForce *InForce `json:"in_force,omitempty"`
	// CPUSeconds is the CPU each pod's proxy container used over the window, from cAdvisor
	// through Prometheus or a kubelet; nil when the source has none.
	CPUSeconds map[string]float64 `json:"cpu_seconds,omitempty"`
	// CPU is each pod's proxy container over the window as cAdvisor counts it: its CPU limit
	// and how often the kernel held it to the limit (nil when the source has none).
	CPU map[string]stats.CPU `json:"cpu,omitempty"`
	// Missing says what could not be read and why, in the user's terms.
	Missing []string `json:"missing,omitempty"`
	// SinceStart says the counters are those since each Envoy started: none moved between
	// the two readings (an idle gateway, or a page that does not change), so the spread is
	// judged on what the pods counted over their lives and Span is the longest uptime.
	SinceStart bool `json:"since_start,omitempty"`
	// Tier is the ambient tier the pods are (TierWaypoint, or "" for a gateway): a lever for a
	// waypoint is a filter naming its Gateway.
	Tier string `json:"tier,omitempty"`
}

// TierWaypoint names a window of an ambient waypoint's pods.
const TierWaypoint = "waypoint"

// PodWindow is one pod over the window: its stats at the start and at the end.
type PodWindow struct {
	Name      string `json:"name"`
	Pre, Post stats.Pod
	Delta     stats.Pod `json:"-"`
	Restarted bool      `json:"restarted,omitempty"`
	Workers   int       `json:"workers"`
	// PreRead says Pre was read at the window's start: false for a pod first seen at its end
	// and in a window of the counters since start, where Pre is zero.
	PreRead bool `json:"-"`
}

// windowFrom builds a window from two readings per pod, matched by pod name, under names
// discovered from the readings themselves.
func windowFrom(source string, pre, post []stats.Snapshot, span time.Duration, pick stats.Pick) (*Window, error) {
	w := &Window{Source: source, Span: span}
	names, err := stats.DiscoverAny(append(append([]stats.Snapshot{}, pre...), post...), pick)
	if err != nil {
		return nil, err
	}
	if names.HCMPrefix == "" {
		w.Missing = append(w.Missing, fmt.Sprintf("no HTTP connection manager carries listener %s (a TCP proxy, as Consul's default public listener is): requests are not counted, and the load is judged by its connections (--hcm names one)", names.Listener))
	}
	w.Names = names
	byName := map[string]stats.Snapshot{}
	for _, s := range pre {
		byName[s.Pod] = s
	}
	for _, s := range post {
		p := PodWindow{Name: s.Pod, Post: stats.Extract(s, names)}
		if b, ok := byName[s.Pod]; ok {
			p.Pre, p.PreRead = stats.Extract(b, names), true
		}
		p.Delta, p.Restarted = stats.Delta(p.Pre, p.Post)
		p.Workers = len(p.Post.WorkerCx)
		if c := s.Sum("envoy_server_concurrency", nil); c > 0 {
			p.Workers = int(c)
		}
		w.Pods = append(w.Pods, p)
	}
	sort.Slice(w.Pods, func(i, j int) bool { return w.Pods[i].Name < w.Pods[j].Name })
	if !slices.ContainsFunc(w.Pods, func(p PodWindow) bool { return len(p.Post.WorkerActive) > 0 || len(p.Post.WorkerCx) > 0 }) {
		// The worker columns would read 0, not an even spread.
		w.Missing = append(w.Missing, workersMissing(names.Listener))
	}
	return w, nil
}

// period names the span the counters cover, for the report's sentences.
func (w *Window) period() string {
	if w.SinceStart {
		if w.Span > 0 {
			return fmt.Sprintf("since the Envoy started (up to %s)", w.Span)
		}
		return "since the Envoy started"
	}
	return fmt.Sprintf("in the %s window", w.Span.Round(time.Second))
}

// still reports whether no counter the verdict reads moved between the two readings.
func still(pods []PodWindow) bool {
	for _, p := range pods {
		d := p.Delta
		if p.Restarted || d.CxTotal > 0 || d.RqTotal > 0 || d.LCxTotal > 0 || d.TxBytes > 0 || sum(values(d.WorkerCx)) > 0 {
			return false
		}
	}
	return true
}

// sinceStart puts the counters since each Envoy started in place of a still window's: Envoy's
// counters start at zero with the process (server.uptime counts from then), so they are what
// it placed over its life. Gauges (open connections, streams in flight) stay the last reading's.
func (w *Window) sinceStart() {
	var up float64
	for i := range w.Pods {
		p := &w.Pods[i]
		p.Pre, p.PreRead = stats.Pod{}, false
		p.Delta, _ = stats.Delta(stats.Pod{}, p.Post)
		up = max(up, p.Post.Uptime)
	}
	life := "since each Envoy started (server.uptime is not exported, so rates are not known)"
	if up > 0 {
		life = fmt.Sprintf("since each Envoy started, at most %s ago (server.uptime)", time.Duration(up)*time.Second)
		w.Span = time.Duration(up) * time.Second
	} else {
		w.Span = 0
	}
	w.SinceStart, w.Covered = true, 0
	w.Missing = append(w.Missing, "no counter moved between the two readings (an idle gateway, or a page that does not change): judged on the counters "+life)
}

// workersMissing says which per-worker stats are missing and how to turn them on.
func workersMissing(listener string) string {
	return fmt.Sprintf("per-worker stats not exposed: no listener.%s.worker_<N>.downstream_cx_total or _active (envoy_listener_worker_<N>_downstream_cx_total, or envoy_listener_worker_downstream_cx_total{envoy_worker_id=...} under Envoy's default tags), so the spread over workers is not measured. "+
		"Envoy makes them for every listener; a stats matcher dropped them. On Istio, add the regex listener\\..* to proxyStatsMatcher.inclusionRegexps in the proxy.istio.io/config annotation (or meshConfig.defaultConfig) and restart the pods; "+
		"on plain Envoy (and gateways built on it), let stats_config.stats_matcher include ^listener\\..*\\.worker_", listener)
}

// setCPU keeps each pod's CPU over the window from two cAdvisor readings.
func (w *Window) setCPU(pre, post map[string]stats.CPU) {
	w.CPU, w.CPUSeconds = map[string]stats.CPU{}, map[string]float64{}
	for _, p := range w.Pods {
		if c, ok := post[p.Name]; ok {
			d := stats.CPUDelta(pre[p.Name], c)
			w.CPU[p.Name], w.CPUSeconds[p.Name] = d, d.UsageS
		}
	}
}
