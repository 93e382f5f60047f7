package inforce_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/internal/promtest"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/runner/stats"
)

// TestLiveTargetsAgainstPrometheus: a real Prometheus scraping emulated gateway pods under the
// scrape pool a PodMonitor gets; a pool with no target is named, with why.
func TestLiveTargetsAgainstPrometheus(t *testing.T) {
	_, urls := pool(t, 2, 1, 0)
	gw := inforce.PodMonitorPool("monitoring", "igw-envoy")
	var targets []dashboard.ScrapeTarget
	for i, u := range urls {
		targets = append(targets, dashboard.ScrapeTarget{Job: gw, Pod: "gw-" + string(rune('a'+i)),
			HostPort: strings.TrimPrefix(u, "http://"), Path: "/stats/prometheus"})
	}
	api := promtest.Start(t, time.Second, targets)
	get := func(ctx context.Context, path string) ([]byte, error) {
		return stats.GetAdmin(ctx, http.DefaultClient, api, path)
	}
	ctx := context.Background()
	up, err := inforce.LiveTargets(ctx, get, []string{gw}, 30*time.Second)
	if err != nil || up[gw] != 2 {
		t.Fatalf("live targets %v: %v", up, err)
	}
	zt := inforce.PodMonitorPool("monitoring", "ztunnel")
	_, err = inforce.LiveTargets(ctx, get, []string{gw, zt}, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), zt+" (no target") || strings.Contains(err.Error(), gw) {
		t.Errorf("a pool without targets: %v", err)
	}
}
