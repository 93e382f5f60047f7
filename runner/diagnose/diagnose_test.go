package diagnose

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/internal/promtest"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/stats"
)

// readPages reads a folder of <pod>.prom pages, as a suite run keeps them.
func readPages(t *testing.T, dir string, view func(stats.Snapshot) stats.Snapshot) []stats.Snapshot {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []stats.Snapshot
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".prom") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s, err := stats.ParseSnapshot(strings.TrimSuffix(e.Name(), ".prom"), time.Time{}, b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, view(s))
	}
	return out
}

// TestRealGatewayPagesGiveTheSameDiagnosis: the pages of a default local run, as the emulator
// served them and as a real Istio 1.27 gateway would (Istio's names, no igwlab.* stats), give
// the same verdict, hot pod and lever.
func TestRealGatewayPagesGiveTheSameDiagnosis(t *testing.T) {
	dir := testutil.Untar(t, filepath.Join("..", "suite", "testdata", "fullrun.tar.gz"))
	asServed := func(s stats.Snapshot) stats.Snapshot { return s }
	for _, c := range []struct{ scenario, verdict string }{
		{"02-trigger", FewConnections},
		{"12-grpc-variant", FewConnections},
		{"01-baseline", AsChance},
	} {
		var reports []*Report
		for _, view := range []func(stats.Snapshot) stats.Snapshot{asServed, stats.RealGatewayView} {
			pre := readPages(t, filepath.Join(dir, c.scenario, "stats_pre"), view)
			post := readPages(t, filepath.Join(dir, c.scenario, "stats_post"), view)
			w, err := windowFrom("files", pre, post, 8*time.Second, stats.Pick{})
			if err != nil {
				t.Fatalf("%s: %v", c.scenario, err)
			}
			reports = append(reports, Judge(w))
		}
		emu, real := reports[0], reports[1]
		if emu.Verdict != c.verdict {
			t.Errorf("%s: %s (%s), want %s", c.scenario, emu.Verdict, emu.Summary, c.verdict)
		}
		if real.Verdict != emu.Verdict || real.HotPod != emu.HotPod || leverOf(real) != leverOf(emu) {
			t.Errorf("%s: the real gateway's pages say %s (hot %s, %s), the emulator's %s (hot %s, %s)",
				c.scenario, real.Verdict, real.HotPod, leverOf(real), emu.Verdict, emu.HotPod, leverOf(emu))
		}
	}
}

func leverOf(r *Report) string {
	if r.Lever == nil {
		return "no lever"
	}
	return r.Lever.Knob + "=" + r.Lever.Value
}

// runLoad drives a client against the pool for d in the background.
func runLoad(t *testing.T, p *emulator.Pool, s load.Spec, d time.Duration) <-chan struct{} {
	t.Helper()
	s.Target, s.Duration = p.VIP(), d
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := load.Run(context.Background(), s); err != nil {
			t.Error(err)
		}
	}()
	return done
}

var (
	concentrated = load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 50, Path: "/get"}
	spread       = load.Spec{Kind: "h2dial", Mode: "distinct", Concurrency: 60, Path: "/get", QPS: 1200}
)

// hotPod is the pod the pool put the most connections on.
func hotPod(p *emulator.Pool) string {
	best, n := "", -1
	for _, pod := range p.Pods() {
		if c := pod.OpenConnections(); c > n {
			best, n = pod.Name, c
		}
	}
	return best
}

// placementSeed fixes where the pool's VIP puts each new connection. Placed at random, sixty
// connections land outside chance's 95% band one run in forty by the band's own definition,
// and the spread client's test would then fail for no fault; with the seed fixed, the
// placement is the same random draw every run (inside the band), and the verdicts are
// deterministic.
const placementSeed = 1

func startPool(t *testing.T) *emulator.Pool {
	t.Helper()
	return emulatortest.Gateways(t, 6, 1, placementSeed)
}

func adminURLs(p *emulator.Pool) []string {
	var out []string
	for _, pod := range p.Pods() {
		out = append(out, pod.AdminURL())
	}
	return out
}

func TestAdminSourceTellsConcentratedFromSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	for _, c := range []struct {
		name    string
		spec    load.Spec
		verdict string
	}{{"one shared connection", concentrated, FewConnections}, {"sixty connections", spread, AsChance}} {
		t.Run(c.name, func(t *testing.T) {
			p := startPool(t)
			done := runLoad(t, p, c.spec, 4*time.Second)
			time.Sleep(500 * time.Millisecond)
			hot := hotPod(p)
			w, err := AdminSource{URLs: adminURLs(p), Duration: 2 * time.Second}.Window(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := Judge(w)
			<-done
			var text strings.Builder
			WriteText(&text, r)
			t.Log("\n" + text.String())
			if r.Verdict != c.verdict {
				t.Fatalf("%s (%s), want %s", r.Verdict, r.Summary, c.verdict)
			}
			if c.verdict == FewConnections && r.HotPod != hot {
				t.Errorf("hot pod %s, the connection is on %s", r.HotPod, hot)
			}
			if c.verdict == FewConnections && (r.Lever == nil || r.Lever.Knob != knobMaxRequests || !strings.Contains(r.Lever.Preview, "igwlab preview --set "+knobMaxRequests+"=")) {
				t.Errorf("lever %+v, want max_requests_per_connection with a preview line", r.Lever)
			}
			if r.InForce == nil || r.InForce.Pods != 6 {
				t.Errorf("config_dump not read from every pod: %+v", r.InForce)
			}
		})
	}
}

// TestBadSourcesSayWhatToCheck: an endpoint that refuses, one that never answers, a
// Prometheus that is not there or has nothing in the range; each is a clear error, in time.
func TestBadSourcesSayWhatToCheck(t *testing.T) {
	closed := closedAddr(t)
	silent := silentAddr(t)
	ctx := context.Background()
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"admin refuses", func() error {
			_, err := AdminSource{URLs: []string{"http://" + closed}, Duration: time.Millisecond}.Window(ctx)
			return err
		}, "cannot reach"},
		{"admin never answers", func() error {
			_, err := AdminSource{URLs: []string{"http://" + silent}, Duration: time.Millisecond, Timeout: 300 * time.Millisecond}.Window(ctx)
			return err
		}, "no answer"},
		{"prometheus unreachable", func() error {
			_, err := PromSource{URL: "http://" + closed, Start: time.Now().Add(-time.Minute), End: time.Now(), PodLabel: "pod", PodRegex: ".+"}.Window(ctx)
			return err
		}, "cannot query Prometheus"},
		{"prometheus never answers", func() error {
			_, err := PromSource{URL: "http://" + silent, Start: time.Now().Add(-time.Minute), End: time.Now(), PodLabel: "pod", PodRegex: ".+", Timeout: 300 * time.Millisecond}.Window(ctx)
			return err
		}, "cannot query Prometheus"},
		{"empty range", func() error {
			_, err := PromSource{URL: "http://" + closed, Start: time.Now(), End: time.Now().Add(-time.Minute), PodLabel: "pod", PodRegex: ".+"}.Window(ctx)
			return err
		}, "--start must be before --end"},
		{"bad admin list", func() error { _, err := ParseAdminURLs("127.0.0.1:15000"); return err }, "Envoy admin base URL"},
	}
	for _, c := range cases {
		start := time.Now()
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %s", c.name, d)
		}
	}
}

// closedAddr is an address nothing listens on for the test's length (testutil.FreePort: a
// kernel-assigned port closed again may be another test process's listener a moment later).
func closedAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
}

// silentAddr accepts connections and never answers.
func silentAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// TestPrometheusSourceTellsConcentratedFromSpread runs Debian's prometheus scraping the pool
// (the pod label set as the lab's PodMonitors set it) while a concentrated client, and then a
// spread one, runs, and asks diagnose about each window through client_golang's API client.
func TestPrometheusSourceTellsConcentratedFromSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and drives load")
	}
	// Dispatcher stats on: the workers' loops come through Prometheus too.
	p, err := emulator.Start(emulator.Config{Pods: 6, Workers: 1, Seed: placementSeed, DispatcherStats: true, Model: emulator.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Apply(emulator.Setup{})
	var targets []dashboard.ScrapeTarget
	for _, pod := range p.Pods() {
		u, _ := url.Parse(pod.AdminURL())
		targets = append(targets, dashboard.ScrapeTarget{Job: "istio-ingressgateway", Pod: pod.Name, HostPort: u.Host, Path: "/stats/prometheus"})
	}
	api := promtest.Start(t, time.Second, targets)
	promtest.WaitFor(t, 30*time.Second, "a scrape of every pod", func() bool {
		v, err := promtest.Instant(api, `count(envoy_server_concurrency)`)
		return err == nil && len(v) == 1 && v[0] == 6
	})
	for _, c := range []struct {
		name    string
		spec    load.Spec
		verdict string
	}{{"one shared connection", concentrated, FewConnections}, {"sixty connections", spread, AsChance}} {
		start := time.Now()
		done := runLoad(t, p, c.spec, 5*time.Second)
		time.Sleep(time.Second)
		hot := hotPod(p)
		<-done
		end := time.Now()
		time.Sleep(2500 * time.Millisecond) // the scrapes after the load
		src := PromSource{URL: api, Start: start, End: end, PodLabel: "pod", PodRegex: "istio-ingressgateway-.*"}
		w, err := src.Window(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := Judge(w)
		if r.Verdict != c.verdict {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Verdict, r.Summary, c.verdict)
			continue
		}
		if c.verdict == FewConnections && r.HotPod != hot {
			t.Errorf("%s: hot pod %s, the connection was on %s", c.name, r.HotPod, hot)
		}
		// The workers' loops through Prometheus: the hottest is the one worker the shared
		// connection is on (whether its loop never waited depends on how fast this machine's
		// client keeps 50 streams going: TestDiagnoseNamesThePeggedWorker drives 500); sixty
		// light connections peg none.
		if c.verdict == FewConnections && !strings.HasPrefix(r.Loop, hot+"/worker_0's event loop") && r.Pegged != hot+"/worker_0" {
			t.Errorf("%s: worker loop %q, want %s/worker_0 the hottest", c.name, r.Loop, hot)
		}
		if c.verdict == AsChance && r.Pegged != "" {
			t.Errorf("%s: pegged worker %q (%s)", c.name, r.Pegged, r.Loop)
		}
		if !strings.Contains(strings.Join(r.Notes, " "), "container_cpu_usage_seconds_total") {
			t.Errorf("%s: no word on the missing CPU metrics: %v", c.name, r.Notes)
		}
	}
	// A range before the pool existed has no gateway series.
	_, err = PromSource{URL: api, Start: time.Now().Add(-3 * time.Hour), End: time.Now().Add(-2 * time.Hour), PodLabel: "pod", PodRegex: ".+"}.Window(context.Background())
	if err == nil || !strings.Contains(err.Error(), "has no gateway series") {
		t.Errorf("empty range: %v", err)
	}
	// The wrong pod label names what is missing.
	_, err = PromSource{URL: api, Start: time.Now().Add(-time.Minute), End: time.Now(), PodLabel: "kubernetes_pod_name", PodRegex: ".+"}.Window(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kubernetes_pod_name") {
		t.Errorf("wrong pod label: %v", err)
	}
}
