package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/diagnose"
)

// tierSources are the ambient tiers diagnose reads beside the pool it diagnoses: the
// waypoint's Envoy pods and the ztunnels, over the same window.
type tierSources struct {
	gateway  bool // the diagnosed pool is the ingress gateway (--admin)
	waypoint diagnose.Source
	ztunnels []string
	duration time.Duration
	client   *http.Client
}

func newTierSources(gateway bool, waypointAdmin, ztunnels string, d, timeout time.Duration) (*tierSources, error) {
	t := &tierSources{gateway: gateway, duration: d, client: &http.Client{Timeout: timeout}}
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
		t.ztunnels = urls
	}
	return t, nil
}

// what names the extra tiers, for the progress line.
func (t *tierSources) what() string {
	var parts []string
	if t.waypoint != nil && t.gateway {
		parts = append(parts, "the waypoint pods")
	}
	if len(t.ztunnels) > 0 {
		parts = append(parts, fmt.Sprintf("%d ztunnel(s)", len(t.ztunnels)))
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
	if len(t.ztunnels) > 0 {
		wg.Go(func() { zt, ztErr = diagnose.ReadZtunnels(ctx, t.client, t.ztunnels, t.duration) })
	}
	wg.Wait()
	for _, err := range []error{mainErr, wpErr, ztErr} {
		if err != nil {
			return nil, nil, err
		}
	}
	var envoy []diagnose.TierWindow
	if waypointIsTheMain {
		envoy = append(envoy, diagnose.TierWindow{Tier: "waypoint", Window: main})
	} else {
		envoy = append(envoy, diagnose.TierWindow{Tier: "gateway", Window: main})
		if wp != nil {
			envoy = append(envoy, diagnose.TierWindow{Tier: "waypoint", Window: wp})
		}
	}
	return main, diagnose.JudgeTiers(envoy, zt), nil
}
