package diagnose

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/internal/promtest"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// diagnoseTiers reads the pool's gateway, waypoint and ztunnel tiers over d, as
// diagnose --admin --waypoint-admin --ztunnel does.
func diagnoseTiers(t *testing.T, p *emulator.Pool, d time.Duration) *Ambient {
	t.Helper()
	ctx := context.Background()
	var wpURLs, ztURLs []string
	for _, w := range p.Waypoints() {
		wpURLs = append(wpURLs, w.AdminURL())
	}
	for _, z := range p.Ztunnels() {
		ztURLs = append(ztURLs, z.MetricsURL()+"/metrics")
	}
	type res struct {
		w   *Window
		err error
	}
	gw, wp := make(chan res, 1), make(chan res, 1)
	go func() { w, err := AdminSource{URLs: adminURLs(p), Duration: d}.Window(ctx); gw <- res{w, err} }()
	go func() { w, err := AdminSource{URLs: wpURLs, Duration: d}.Window(ctx); wp <- res{w, err} }()
	zt, err := ReadZtunnels(ctx, http.DefaultClient, ztURLs, d)
	if err != nil {
		t.Fatal(err)
	}
	g, w := <-gw, <-wp
	if g.err != nil || w.err != nil {
		t.Fatal(g.err, w.err)
	}
	return JudgeTiers([]TierWindow{{Tier: "gateway", Window: g.w}, {Tier: "waypoint", Window: w.w}}, zt)
}

// On the local ambient pool, diagnose names the tier the load concentrates at: the waypoint
// when two mesh clients' connections are tunnelled to it (no gateway involved), the gateway
// when one client connection reaches it.
func TestDiagnoseNamesTheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	p, err := emulator.Start(emulator.Config{Pods: 3, Workers: 1, WaypointPods: 3, WaypointWorkers: 2, Seed: placementSeed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	if _, err := p.ApplyEastWest(emulator.Setup{}, stacks.EastWest{Clients: 2}); err != nil {
		t.Fatal(err)
	}
	pods, err := p.ClientPods(2)
	if err != nil {
		t.Fatal(err)
	}
	spec := load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 50, Path: "/get", Duration: 4 * time.Second}
	for _, cp := range pods {
		spec.Targets = append(spec.Targets, cp.Addr)
	}
	done := make(chan error, 1)
	go func() { _, err := load.Run(context.Background(), spec); done <- err }()
	time.Sleep(time.Second)
	a := diagnoseTiers(t, p, 2*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	WriteTiersText(&text, a)
	t.Log("\n" + text.String())
	if a.Concentrates != "waypoint" {
		t.Fatalf("east-west: concentrates at %q, want the waypoint", a.Concentrates)
	}
	// The waypoint's lever is a filter naming its Gateway, in the context Istio patches a
	// waypoint's listeners in, not the gateway's selector-based one.
	if l := a.Tiers[1].Report.Lever; l == nil || !strings.Contains(l.EnvoyFilter, "targetRefs") ||
		!strings.Contains(l.EnvoyFilter, "SIDECAR_INBOUND") || !strings.Contains(l.EnvoyFilter, "igw-test-waypoint") || strings.Contains(l.EnvoyFilter, "workloadSelector") {
		t.Errorf("the waypoint's lever: %+v", l)
	}

	p.Apply(emulator.Setup{})
	ingress := runLoad(t, p, concentrated, 4*time.Second)
	time.Sleep(time.Second)
	a = diagnoseTiers(t, p, 2*time.Second)
	<-ingress
	text.Reset()
	WriteTiersText(&text, a)
	t.Log("\n" + text.String())
	if a.Concentrates != "gateway" {
		t.Fatalf("ingress: concentrates at %q, want the gateway", a.Concentrates)
	}
}

// The tier named is the one whose hottest worker or thread is busiest once one is near
// saturation, ztunnel's threads included; below that, the Envoy tier spread furthest beyond
// chance.
func TestJudgeTiersPicksTheSaturatedTier(t *testing.T) {
	window := func(busy ...float64) *Window {
		w := &Window{Span: time.Second}
		for i, b := range busy {
			w.Pods = append(w.Pods, PodWindow{Name: string(rune('a' + i)), Delta: stats.Pod{WorkerBusyNs: map[int]float64{0: b * 1e9}}})
		}
		return w
	}
	zt := func(busy ...float64) *ZtunnelWindow {
		return &ZtunnelWindow{Span: time.Second, Pre: []stats.Ztunnel{{Name: "z", ThreadBusyS: make([]float64, len(busy))}},
			Post: []stats.Ztunnel{{Name: "z", ThreadBusyS: busy, Tunnels: 4}}}
	}
	for _, c := range []struct {
		name string
		gw   *Window
		wp   *Window
		zt   *ZtunnelWindow
		want string
	}{
		{"ztunnel's thread saturated", window(0.3, 0.2), window(0.5, 0.4), zt(0.97, 0.95), "ztunnel"},
		{"waypoint worker saturated", window(0.3, 0.2), window(0.99, 0.1), zt(0.4, 0.1), "waypoint"},
		{"gateway worker saturated", window(0.95, 0.1), window(0.5, 0.4), zt(0.4, 0.1), "gateway"},
		{"nothing near saturation", window(0.3, 0.2), window(0.5, 0.4), zt(0.4, 0.1), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := JudgeTiers([]TierWindow{{Tier: "gateway", Window: c.gw}, {Tier: "waypoint", Window: c.wp}}, c.zt)
			if a.Concentrates != c.want {
				t.Fatalf("concentrates at %q (%s), want %q", a.Concentrates, a.Why, c.want)
			}
		})
	}
}

// Through Prometheus scraping the local ambient pool (the waypoint pods' admins with dispatcher
// stats on, the ztunnels' metrics), diagnose names the waypoint as the tier where two mesh
// clients' connections concentrate, and reads ztunnel's threads and tunnels.
func TestPrometheusNamesTheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and drives load")
	}
	p, err := emulator.Start(emulator.Config{Pods: 2, Workers: 1, WaypointPods: 3, WaypointWorkers: 2, Seed: placementSeed, DispatcherStats: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.ApplyEastWest(emulator.Setup{}, stacks.EastWest{Clients: 2}); err != nil {
		t.Fatal(err)
	}
	var targets []dashboard.ScrapeTarget
	for _, w := range p.Waypoints() {
		u, _ := url.Parse(w.AdminURL())
		targets = append(targets, dashboard.ScrapeTarget{Job: "waypoint", Pod: w.Name, HostPort: u.Host, Path: "/stats/prometheus"})
	}
	for _, pod := range p.Pods() {
		u, _ := url.Parse(pod.AdminURL())
		targets = append(targets, dashboard.ScrapeTarget{Job: "istio-ingressgateway", Pod: pod.Name, HostPort: u.Host, Path: "/stats/prometheus"})
	}
	for _, z := range p.Ztunnels() {
		u, _ := url.Parse(z.MetricsURL())
		targets = append(targets, dashboard.ScrapeTarget{Job: "ztunnel", Pod: z.Name, HostPort: u.Host, Path: "/metrics"})
	}
	api := promtest.Start(t, time.Second, targets)
	promtest.WaitFor(t, 30*time.Second, "a scrape of every waypoint pod", func() bool {
		v, err := promtest.Instant(api, `count(envoy_server_concurrency{pod=~"igw-test-waypoint-.*"})`)
		return err == nil && len(v) == 1 && v[0] == 3
	})
	pods, err := p.ClientPods(2)
	if err != nil {
		t.Fatal(err)
	}
	spec := load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 50, Path: "/get", Duration: 5 * time.Second}
	for _, cp := range pods {
		spec.Targets = append(spec.Targets, cp.Addr)
	}
	start := time.Now()
	if _, err := load.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	time.Sleep(2500 * time.Millisecond) // the scrapes after the load
	ctx := context.Background()
	wp, err := PromSource{URL: api, Start: start, End: end, PodLabel: "pod", PodRegex: "igw-test-waypoint-.*"}.Window(ctx)
	if err != nil {
		t.Fatal(err)
	}
	zt, err := PromZtunnels(ctx, api, start, end, "pod", "ztunnel-.*", 0)
	if err != nil {
		t.Fatal(err)
	}
	a := JudgeTiers([]TierWindow{{Tier: "waypoint", Window: wp}}, zt)
	var text strings.Builder
	WriteTiersText(&text, a)
	t.Log("\n" + text.String())
	if a.Concentrates != "waypoint" {
		t.Fatalf("concentrates at %q, want the waypoint", a.Concentrates)
	}
	z := a.Tiers[len(a.Tiers)-1]
	if z.Tier != "ztunnel" || z.Threads != 2 || z.HottestBusy <= 0 || z.HBONE < 2 {
		t.Errorf("ztunnel tier through Prometheus: %+v", z)
	}
}
