// Package inforce waits until every gateway pod's Envoy admin shows what a change asked for:
// the knobs in its /config_dump, no listener left draining, the workers and stats the lab
// reads. It is the one implementation behind the runner's wait before it measures and the
// lab program's after-update checks (Pulumi resource hooks), so it links neither Pulumi nor
// Kubernetes: a Pool says how the pods are reached.
package inforce

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Pool is the gateway pods a check reads: their names and a GET on each one's Envoy admin.
type Pool interface {
	Pods(ctx context.Context) ([]string, error)
	Admin(ctx context.Context, pod, path string) ([]byte, error)
}

// Want is what every pod must show at the same time.
type Want struct {
	// Knobs must all show in the pod's /config_dump, on the gateway listener whose connection
	// manager has Prefix as its stat prefix ("" takes any outbound_ one).
	Knobs  stacks.Knobs
	Prefix string
	// Drained: no listener and no filter chain draining (the listener_manager gauges).
	Drained bool
	// Concurrency, when not 0, is the worker count each pod's /server_info must report.
	Concurrency int
	// WorkerStats: /stats/prometheus has the per-worker listener stats and the connection
	// manager's stats the lab reads (Istio's proxyStatsMatcher took effect).
	WorkerStats bool
	// Pods is how many pods there must be (0: at least one).
	Pods int
	// Push, when not 0, is the config push generation each pod's /config_dump must show
	// (stacks.PushTag): the push reached the pod, so a Drained read after it means the
	// connections it replaced have drained, not that it has not arrived.
	Push int
	// StartedAfter, when set, is when the pods' Envoy must have started after (server_info's
	// uptime): a rolling restart completed when every pod is a new one.
	StartedAfter time.Time
	// Live: each pod's /ready says LIVE (the readiness probe passes: the pod serves).
	Live bool
}

// Result is what a check that passed saw.
type Result struct {
	Pods int
	Took time.Duration
}

// Pending is one pod that does not show it (yet), and what it lacks.
type Pending struct {
	Pod     string
	Missing []string
}

// Error is a check that timed out: the pods that did not show what was wanted, and why.
type Error struct {
	Timeout time.Duration
	Seen    int // pods found
	Want    int // pods expected (0: any)
	Pending []Pending
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %s, ", e.Timeout)
	switch {
	case e.Seen == 0:
		b.WriteString("no gateway pod found")
	case e.Want > 0 && e.Seen != e.Want:
		fmt.Fprintf(&b, "%d gateway pods found, %d expected", e.Seen, e.Want)
	default:
		fmt.Fprintf(&b, "%d of %d gateway pods do not show it", len(e.Pending), e.Seen)
	}
	for _, p := range e.Pending {
		fmt.Fprintf(&b, "\n  %s: %s", p.Pod, strings.Join(p.Missing, "; "))
	}
	return b.String()
}

// Fields are the distinct knob paths the pending pods lack, sorted.
func (e *Error) Fields() []string {
	var out []string
	for _, p := range e.Pending {
		for _, m := range p.Missing {
			if path, _, ok := strings.Cut(m, "="); ok && !strings.ContainsAny(path, " :") && !slices.Contains(out, path) {
				out = append(out, path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Poll is how often Wait reads the admins.
var Poll = 250 * time.Millisecond

// Wait reads every pod's admin until all of them show what w asks for at once, or timeout
// passes (an *Error naming each pod and what it lacks), or ctx ends.
func Wait(ctx context.Context, pool Pool, w Want, timeout time.Duration) (Result, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		pods, pending, err := check(ctx, pool, w)
		if err != nil {
			return Result{}, err
		}
		ok := len(pods) > 0 && (w.Pods == 0 || len(pods) == w.Pods) && len(pending) == 0
		if ok {
			return Result{Pods: len(pods), Took: time.Since(start)}, nil
		}
		if time.Now().After(deadline) {
			return Result{}, &Error{Timeout: timeout, Seen: len(pods), Want: w.Pods, Pending: pending}
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(Poll):
		}
	}
}

// check reads each pod once. An admin that cannot be read is a pending pod, not an error:
// a pod may be restarting; only listing the pods failing ends the wait.
func check(ctx context.Context, pool Pool, w Want) ([]string, []Pending, error) {
	pods, err := pool.Pods(ctx)
	if err != nil {
		return nil, nil, err
	}
	var pending []Pending
	for _, pod := range pods {
		if missing := checkPod(ctx, pool, pod, w); len(missing) > 0 {
			pending = append(pending, Pending{Pod: pod, Missing: missing})
		}
	}
	return pods, pending, nil
}

func checkPod(ctx context.Context, pool Pool, pod string, w Want) []string {
	var missing []string
	if len(w.Knobs.Set()) > 0 {
		dump, err := pool.Admin(ctx, pod, "/config_dump")
		if err != nil {
			return []string{err.Error()}
		}
		m, err := stats.MissingKnobs(dump, w.Knobs, w.Prefix)
		if err != nil {
			return []string{err.Error()}
		}
		missing = append(missing, m...)
	}
	if w.Push > 0 {
		missing = append(missing, pushShown(ctx, pool, pod, w)...)
	}
	if w.Drained {
		raw, err := pool.Admin(ctx, pod, "/stats?filter="+url.QueryEscape(stats.DrainingFilter))
		if err != nil {
			return append(missing, err.Error())
		}
		if n := stats.Draining(string(raw)); n > 0 {
			missing = append(missing, fmt.Sprintf("%d listener(s) or filter chain(s) still draining", n))
		}
	}
	if w.Concurrency > 0 || !w.StartedAfter.IsZero() {
		missing = append(missing, serverInfo(ctx, pool, pod, w)...)
	}
	if w.Live {
		missing = append(missing, live(ctx, pool, pod)...)
	}
	if w.WorkerStats {
		missing = append(missing, workerStats(ctx, pool, pod)...)
	}
	return missing
}

// workerStats checks that the stats the lab reads exist: the connection manager's, and the
// listener's per worker (Istio's default stats matcher drops both).
func workerStats(ctx context.Context, pool Pool, pod string) []string {
	raw, err := pool.Admin(ctx, pod, "/stats/prometheus")
	if err != nil {
		return []string{err.Error()}
	}
	snap, err := stats.ParseSnapshot(pod, time.Now(), raw)
	if err != nil {
		return []string{err.Error()}
	}
	names, err := stats.Discover([]stats.Snapshot{snap}, "")
	if err != nil {
		return []string{err.Error()}
	}
	if len(snap.WorkerSeries("downstream_cx_active", names.Listener)) == 0 {
		return []string{fmt.Sprintf("no per-worker listener stats (envoy_listener_worker_N_downstream_cx_active{listener_address=%q}): is proxyStatsMatcher including listener.*?", names.Listener)}
	}
	return nil
}

// pushShown checks that the pod's listener carries the push generation wanted.
func pushShown(ctx context.Context, pool Pool, pod string, w Want) []string {
	dump, err := pool.Admin(ctx, pod, "/config_dump")
	if err != nil {
		return []string{err.Error()}
	}
	n, err := stats.PushInForce(dump, w.Prefix)
	if err != nil {
		return []string{err.Error()}
	}
	if n != w.Push {
		return []string{fmt.Sprintf("config push %d not in force (config_dump: tracing tag %s=%d): istiod has not pushed it to this pod yet", w.Push, stacks.PushTag, n)}
	}
	return nil
}

// serverInfo checks the worker count and the process's start against /server_info.
func serverInfo(ctx context.Context, pool Pool, pod string, w Want) []string {
	raw, err := pool.Admin(ctx, pod, "/server_info")
	if err != nil {
		return []string{err.Error()}
	}
	si, err := stats.ParseServerInfo(raw)
	if err != nil {
		return []string{err.Error()}
	}
	var missing []string
	if w.Concurrency > 0 && si.Concurrency != w.Concurrency {
		missing = append(missing, fmt.Sprintf("concurrency=%d (server_info: %d)", w.Concurrency, si.Concurrency))
	}
	// uptime_current_epoch is in whole seconds: a pod started within the second of the
	// restart's time counts as new.
	if started := time.Now().Add(-si.Uptime); !w.StartedAfter.IsZero() && started.Before(w.StartedAfter.Add(-time.Second)) {
		missing = append(missing, fmt.Sprintf("started before the restart of %s (server_info: up %s): an old pod still serves",
			w.StartedAfter.UTC().Format(time.RFC3339), si.Uptime))
	}
	return missing
}

// live checks that the pod's /ready says LIVE, as the readiness probe does.
func live(ctx context.Context, pool Pool, pod string) []string {
	raw, err := pool.Admin(ctx, pod, "/ready")
	if err != nil {
		return []string{"not ready: " + err.Error()}
	}
	if s := strings.TrimSpace(string(raw)); s != "LIVE" {
		return []string{fmt.Sprintf("not ready (/ready: %s)", s)}
	}
	return nil
}
