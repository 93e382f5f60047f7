package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/stats"
)

// tierSources are the ambient tiers diagnose reads beside the pool it diagnoses: the
// waypoint's Envoy pods and the ztunnels, over the same window.
type tierSources struct {
	gateway  bool // the diagnosed pool is the ingress gateway (--admin, --prometheus)
	waypoint diagnose.Source
	// ztunnels reads the ztunnels over the window (nil: not asked for); nztunnels says how
	// many, for the progress line (0: through Prometheus).
	ztunnels  func(ctx context.Context) (*diagnose.ZtunnelWindow, error)
	nztunnels int
}

func newTierSources(gateway bool, waypointAdmin, ztunnels string, d, timeout time.Duration) (*tierSources, error) {
	t := &tierSources{gateway: gateway}
	client := &http.Client{Timeout: timeout}
	if waypointAdmin != "" {
		urls, err := diagnose.ParseAdminURLs(waypointAdmin)
		if err != nil {
			return nil, fmt.Errorf("--waypoint-admin: %w", err)
		}
		// The waypoint's names are its own, found on its pods: --hcm and --listener name the
		// gateway's.
		t.waypoint = diagnose.AdminSource{URLs: urls, Duration: d, Timeout: timeout}
	}
	if ztunnels != "" {
		urls, err := diagnose.ParseAdminURLs(ztunnels)
		if err != nil {
			return nil, fmt.Errorf("--ztunnel: %w", err)
		}
		t.nztunnels = len(urls)
		t.ztunnels = func(ctx context.Context) (*diagnose.ZtunnelWindow, error) {
			return diagnose.ReadZtunnels(ctx, client, urls, d)
		}
	}
	return t, nil
}

// promTierSources reads the waypoint's pods and the ztunnels from the same Prometheus range as
// the gateway's pods, each by its pod regex ("": not asked for).
func promTierSources(g diagnose.PromSource, waypointRegex, ztunnelRegex string) *tierSources {
	t := &tierSources{gateway: true}
	if waypointRegex != "" {
		w := g
		w.PodRegex, w.Pick = waypointRegex, stats.Pick{}
		t.waypoint = w
	}
	if ztunnelRegex != "" {
		t.ztunnels = func(ctx context.Context) (*diagnose.ZtunnelWindow, error) {
			return diagnose.PromZtunnels(ctx, g.URL, g.Start, g.End, g.PodLabel, ztunnelRegex, g.Timeout)
		}
	}
	return t
}

// what names the extra tiers, for the progress line.
func (t *tierSources) what() string {
	var parts []string
	if t.waypoint != nil && t.gateway {
		parts = append(parts, "the waypoint pods")
	}
	switch {
	case t.nztunnels > 0:
		parts = append(parts, fmt.Sprintf("%d ztunnel(s)", t.nztunnels))
	case t.ztunnels != nil:
		parts = append(parts, "the ztunnels")
	}
	if len(parts) == 0 {
		return "the waypoint pods"
	}
	return strings.Join(parts, " and ")
}

// readTiers reads the diagnosed pool and the other tiers side by side, over one window.
func readTiers(ctx context.Context, src diagnose.Source, t *tierSources) (*diagnose.Window, *diagnose.Ambient, error) {
	if t == nil {
		w, err := src.Window(ctx)
		return w, nil, err
	}
	var (
		wg                sync.WaitGroup
		main, wp          *diagnose.Window
		zt                *diagnose.ZtunnelWindow
		mainErr, wpErr    error
		ztErr             error
		waypointIsTheMain = !t.gateway
	)
	wg.Go(func() { main, mainErr = src.Window(ctx) })
	if t.waypoint != nil && !waypointIsTheMain {
		wg.Go(func() { wp, wpErr = t.waypoint.Window(ctx) })
	}
	if t.ztunnels != nil {
		wg.Go(func() { zt, ztErr = t.ztunnels(ctx) })
	}
	wg.Wait()
	for _, err := range []error{mainErr, wpErr, ztErr} {
		if err != nil {
			return nil, nil, err
		}
	}
	var envoy []diagnose.TierWindow
	if waypointIsTheMain {
		main.Tier = diagnose.TierWaypoint // the report's lever is the waypoint's
		envoy = append(envoy, diagnose.TierWindow{Tier: "waypoint", Window: main})
	} else {
		envoy = append(envoy, diagnose.TierWindow{Tier: "gateway", Window: main})
		if wp != nil {
			envoy = append(envoy, diagnose.TierWindow{Tier: "waypoint", Window: wp})
		}
	}
	return main, diagnose.JudgeTiers(envoy, zt), nil
}
