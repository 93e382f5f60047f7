package dashboard_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/internal/promtest"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway/local"
)

// TestDashboardAgainstRealPrometheus starts Debian's prometheus scraping the emulated pool
// (TLS, two workers per pod) while one HTTP/2 connection carries a closed-loop load, then asks
// Prometheus for every dashboard query and every variable: each must return series, and the
// leading-indicator panel must show the single connection's spread, sqrt(n-1).
func TestDashboardAgainstRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and a local pool")
	}
	const pods = 6
	l, err := local.NewLocal(emulator.Config{Pods: pods, Workers: 2, WaypointPods: 3, TLS: true, DispatcherStats: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	api := promtest.Start(t, time.Second, l.ScrapeTargets())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	done := make(chan error, 1)
	go func() {
		_, err := h2dial.Run(loadCtx, h2dial.Options{URL: "https://" + l.Pool.VIP() + "/get", Mode: h2dial.Shared,
			Concurrency: 20, Duration: 2 * time.Minute, InsecureTLS: true})
		done <- err
	}()

	vars := dashboard.LocalDefaults(l.Pool.Config().ListenerPort)
	cv := dashboard.Expand(dashboard.Panels[0].Targets[0].Expr, vars)
	// Wait until rate() has two loaded samples for every series and the CV shows the connection.
	promtest.WaitFor(t, 60*time.Second, "a loaded scrape", func() bool {
		v, err := promtest.Instant(api, `sum(rate(envoy_http_downstream_rq_total{http_conn_manager_prefix="`+vars["hcm"]+`"}[1m]))`)
		if err != nil || len(v) == 0 || v[0] <= 0 {
			return false
		}
		c, err := promtest.Instant(api, cv)
		return err == nil && len(c) == 1 && c[0] > 0
	})

	// Each target is scraped on its own schedule, so a rate() may need another scrape or two
	// before it has two samples; ask again until every query answers or a minute has passed.
	var missing []string
	promtest.WaitFor(t, 60*time.Second, "series for every panel", func() bool {
		missing = missing[:0]
		// The cluster's own series (cAdvisor, kube-state-metrics) are not the pool's to export.
		for _, q := range dashboard.EnvoyQueries() {
			expr := dashboard.Expand(q.Expr, vars)
			if v, err := promtest.Instant(api, expr); err != nil || len(v) == 0 {
				missing = append(missing, fmt.Sprintf("panel %q: %d series, %v\n%s", q.Panel, len(v), err, expr))
			}
		}
		return len(missing) == 0
	}, func() { t.Errorf("after a minute:\n%s", strings.Join(missing, "\n")) })
	c, err := promtest.Instant(api, cv)
	if err != nil || len(c) != 1 || math.Abs(c[0]-math.Sqrt(pods-1)) > 1e-6 {
		t.Errorf("CV panel = %v (%v), want sqrt(%d) = %.4f for one connection", c, err, pods-1, math.Sqrt(pods-1))
	}
	active, err := promtest.Instant(api, dashboard.Expand(`sum(envoy_http_downstream_cx_active{`+dashboard.H+`})`, vars))
	if err != nil || len(active) != 1 || active[0] != 1 {
		t.Errorf("active connections across pods = %v (%v), want 1", active, err)
	}
	for _, v := range dashboard.Variables {
		if v.Regex {
			continue
		}
		values, err := promtest.LabelValues(api, v.LabelName, v.Selector)
		if err != nil || !slices.Contains(values, vars[v.Name]) {
			t.Errorf("variable %s: label_values(%s, %s) = %v (%v), want %q among them", v.Name, v.Selector, v.LabelName, values, err, vars[v.Name])
		}
	}
	stopLoad()
	if err := <-done; err != nil {
		t.Errorf("load: %v", err)
	}
}
