package diagnose

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
)

// statsOnly serves pages, one per reading (the last again once they run out), as an Envoy
// stats endpoint: /stats/prometheus only, every other page 404, as Consul's and Gloo's
// Prometheus listeners route it.
func statsOnly(t *testing.T, pages ...[]byte) string {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/prometheus" {
			http.NotFound(w, r)
			return
		}
		i := min(int(n.Add(1))-1, len(pages)-1)
		_, _ = w.Write(pages[i])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func diagnoseURL(t *testing.T, urls ...string) (*Report, string) {
	t.Helper()
	return judged(t, AdminSource{URLs: urls, Duration: 20 * time.Millisecond})
}

// judged reads one window from src and judges it, logging the report as diagnose prints it.
func judged(t *testing.T, src Source) (*Report, string) {
	t.Helper()
	w, err := src.Window(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := Judge(w)
	var text strings.Builder
	WriteText(&text, r)
	t.Log("\n" + text.String())
	return r, text.String()
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s does not say %q:\n%s", what, want, got)
		}
	}
}

const consulPage = "envoy-consul-dataplane-sidecar-2workers-stats-prometheus-netdata.txt"

// A Consul sidecar's page, as published, under Envoy's default tag names: one pod, whose
// public listener is a TCP proxy, and whose counters do not move between the two readings.
// diagnose judges its two workers on the connections each took since the Envoy started.
func TestDiagnoseConsulSidecarPage(t *testing.T) {
	page := readFile(t, testutil.RealFixture(t, consulPage))
	r, text := diagnoseURL(t, statsOnly(t, page))
	if r.Verdict != BeyondChance && r.Verdict != AsChance {
		t.Fatalf("verdict %q: want one on the two workers", r.Verdict)
	}
	if len(r.Pods) != 1 || !slices.Equal(r.Pods[0].WorkerConns, []float64{3169, 3338}) || r.Pods[0].Workers != 2 {
		t.Fatalf("pods %+v", r.Pods)
	}
	if r.Chance == nil || r.Chance.K != 6507 || r.Chance.N != 2 {
		t.Fatalf("chance band %+v: want k=6507 connections over 2 workers", r.Chance)
	}
	mustContain(t, "the report", text, "judged over its 2 workers", "6507 connections on listener 10.50.132.6_20000 since the Envoy started",
		"worker_0 3169 (49%), worker_1 3338 (51%)", "no counter moved between the two readings", "at most 9h2m7s ago (server.uptime)",
		"no HTTP connection manager carries listener 10.50.132.6_20000")
}

// The same page live: between the readings worker_0 takes 100 connections and worker_1 ten.
// The window, not the Envoy's life, is judged, and 110 connections that uneven are beyond
// chance over two workers.
func TestDiagnoseDefaultTagsLive(t *testing.T) {
	page := readFile(t, testutil.RealFixture(t, consulPage))
	add := map[string]int{`envoy_worker_id="0"`: 100, `envoy_worker_id="1"`: 10}
	later := regexp.MustCompile(`(?m)^(envoy_listener(?:_worker)?_downstream_cx_total\{[^}]*10\.50\.132\.6_20000[^}]*\}) (\d+)$`).
		ReplaceAllFunc(page, func(line []byte) []byte {
			var v int
			i := strings.LastIndexByte(string(line), ' ')
			fmt.Sscan(string(line[i+1:]), &v)
			d := 110
			for id, n := range add {
				if strings.Contains(string(line), id) {
					d = n
				}
			}
			return fmt.Appendf(nil, "%s %d", line[:i], v+d)
		})
	r, text := diagnoseURL(t, statsOnly(t, page, later))
	if r.Verdict != BeyondChance || !slices.Equal(r.Pods[0].WorkerConns, []float64{100, 10}) {
		t.Fatalf("verdict %q, workers %v", r.Verdict, r.Pods[0].WorkerConns)
	}
	// Not an Istio gateway: the lever names Envoy's field, and no EnvoyFilter is offered.
	mustContain(t, "the report", text, "110 connections on listener 10.50.132.6_20000 in the", "listener.connection_balance_config.exact_balance",
		"not an Istio gateway", "on listener 10.50.132.6_20000 set the listener's connection_balance_config.exact_balance: {}")
	if strings.Contains(text, "no counter moved") || strings.Contains(text, "kind: EnvoyFilter") {
		t.Errorf("a window whose counters moved was judged since start, or an EnvoyFilter offered to a Consul sidecar:\n%s", text)
	}
}

// A plain Envoy's page, as published: sixteen workers and not one connection on its listener.
func TestDiagnosePlainEnvoyIdle(t *testing.T) {
	page := readFile(t, testutil.RealFixture(t, "envoy-1.2x-plain-16workers-stats-prometheus-netdata.txt"))
	r, _ := diagnoseURL(t, statsOnly(t, page))
	if r.Verdict != NotEnoughData {
		t.Fatalf("verdict %q", r.Verdict)
	}
	mustContain(t, "the summary", r.Summary, "no load to judge", "listener 0.0.0.0_10000 (connection manager ingress_http) since the Envoy started", "16 worker(s) idle")
}

// A page whose stats matcher dropped the per-worker series says which are missing and how to
// turn them on, on Istio and on plain Envoy, and gives no verdict on one pod.
func TestDiagnoseWithoutWorkerStats(t *testing.T) {
	var kept []string
	for _, line := range strings.Split(string(readFile(t, testutil.RealFixture(t, consulPage))), "\n") {
		if !strings.Contains(line, "envoy_listener_worker_") {
			kept = append(kept, line)
		}
	}
	r, text := diagnoseURL(t, statsOnly(t, []byte(strings.Join(kept, "\n"))))
	if r.Verdict != NotEnoughData {
		t.Fatalf("verdict %q", r.Verdict)
	}
	mustContain(t, "the report", text, "per-worker stats not exposed", "listener.10.50.132.6_20000.worker_<N>.downstream_cx_total",
		"proxyStatsMatcher.inclusionRegexps", "stats_config.stats_matcher", "spread needs two or more pods, or one pod's per-worker connection stats")
}

// Each Envoy-based gateway's own naming, one pod each: the connection manager and listener
// found by their role, and the pod's workers judged.
func TestDiagnoseEachGatewaysNaming(t *testing.T) {
	for _, c := range []struct {
		file, names, verdict string
	}{
		{"envoy-gateway.prom", "402 connections on listener 0.0.0.0_10080", AsChance},
		{"contour.prom", "1330 connections on listener 0.0.0.0_8443", AsChance},
		{"gloo.prom", "1733 connections on listener [__]_8080", BeyondChance},
		{"emissary.prom", "took 13 connection(s) on listener 0.0.0.0_8080", NotEnoughData},
		{"consul.prom", "96 connections on listener 10.50.132.6_20000", AsChance},
	} {
		t.Run(c.file, func(t *testing.T) {
			page := readFile(t, filepath.Join("..", "stats", "testdata", "gateways", c.file))
			r, _ := diagnoseURL(t, statsOnly(t, page))
			if r.Verdict != c.verdict {
				t.Errorf("verdict %q, want %q", r.Verdict, c.verdict)
			}
			mustContain(t, "the summary", r.Summary, c.names)
		})
	}
}

// adminOf serves one pod's Envoy admin: a stats page and a /config_dump; no /server_info, so
// the pod is named by its address.
func adminOf(t *testing.T, page, dump []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stats/prometheus":
			_, _ = w.Write(page)
		case "/config_dump":
			_, _ = w.Write(dump)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Two pods of one Istio 1.20.8 gateway, their /config_dumps as published: both run every knob
// at its default (Envoy 1.28.8), and diagnose says so. The same two with one pod's dump set to
// a stream cap of 100 are two pods of one gateway that disagree: one missed an update.
func TestDiagnoseReadsRealGatewayDumps(t *testing.T) {
	page := regexp.MustCompile(`0\.0\.0\.0_80\b`).ReplaceAll(readFile(t, filepath.Join("..", "stats", "testdata", "istio-gateway.prom")), []byte("0.0.0.0_8080"))
	var dumps [][]byte
	for _, pod := range []string{"x8nls", "6p8p2"} {
		dumps = append(dumps, readFile(t, testutil.RealFixture(t, "istio-1.20.8-ossm-ingressgateway-config_dump-pod-"+pod+".json")))
	}
	watch := func(dumps ...[]byte) (*Report, string) {
		t.Helper()
		var urls []string
		for _, d := range dumps {
			urls = append(urls, adminOf(t, page, d))
		}
		return diagnoseURL(t, urls...)
	}
	r, text := watch(dumps...)
	if f := r.InForce; f == nil || f.Pods != 2 || f.Envoy != "1.28.8" || len(f.Disagree) != 0 || f.MaxConcurrentStreams != 0 {
		t.Fatalf("in force %+v", r.InForce)
	}
	mustContain(t, "the report", text, "2 pod(s) read, Envoy 1.28.8: sets hcm.stream_idle_timeout 0s; the rest at Envoy 1.28.8's defaults, which are 1.35's for these knobs (max_concurrent_streams 2147483647)",
		"/config_dump shows no rotation and no stream cap (Envoy's defaults)")

	capped := regexp.MustCompile(`"stat_prefix": "outbound_0\.0\.0\.0_8080",`).ReplaceAll(dumps[1],
		[]byte(`"stat_prefix": "outbound_0.0.0.0_8080", "http2_protocol_options": {"max_concurrent_streams": 100},`))
	if string(capped) == string(dumps[1]) {
		t.Fatal("the stream cap was not written into the dump")
	}
	r, text = watch(dumps[0], capped)
	if f := r.InForce; f == nil || len(f.Disagree) != 1 || !strings.Contains(f.Disagree[0], "hcm.http2_protocol_options.max_concurrent_streams: ") ||
		!strings.Contains(f.Disagree[0], " 2147483647 (default), ") || !strings.HasSuffix(f.Disagree[0], " 100") {
		t.Fatalf("disagreements %q", r.InForce.Disagree)
	}
	mustContain(t, "the report", text, "the pods of one gateway run different config, so one missed an update")
}
