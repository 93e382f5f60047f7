package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/load"
)

// TestDiagnoseCommand: igwlab diagnose --admin, given the admin URLs igwlab serve prints, on a pool carrying one shared connection prints
// the verdict and the hot pod, writes the same as JSON, and a self-contained HTML page.
func TestDiagnoseCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	p := emulatortest.Gateways(t, 4, 1, 0)
	var urls []string // as igwlab serve prints them
	for _, pod := range p.Pods() {
		urls = append(urls, pod.AdminURL()+"/stats/prometheus")
	}
	done := make(chan error, 1)
	go func() {
		_, err := load.Run(context.Background(), load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 20, Path: "/get",
			Target: p.VIP(), Duration: 5 * time.Second})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	hot := ""
	for _, pod := range p.Pods() {
		if pod.OpenConnections() > 0 {
			hot = pod.Name
		}
	}
	html := filepath.Join(t.TempDir(), "diagnose.html")
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"diagnose", "--admin", strings.Join(urls, ","), "--duration", "1s", "--json", "--html", html, "--gateway", "envoy-gateway", "--gateway-name", "edge"}, &stdout, &stderr); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, stderr.String())
	}
	var r diagnose.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	if r.Verdict != diagnose.FewConnections || r.HotPod != hot || r.Lever == nil || r.Lever.Preview == "" {
		t.Errorf("verdict %q, hot pod %q (want %q), lever %+v", r.Verdict, r.HotPod, hot, r.Lever)
	}
	if f := r.Fix; f == nil || f.Dialect != "envoy-gateway" || !strings.Contains(f.YAML, "kind: ClientTrafficPolicy") || !strings.Contains(f.YAML, "maxRequestsPerConnection:") || !strings.Contains(f.YAML, "name: edge") {
		t.Errorf("--gateway envoy-gateway: the lever in Envoy Gateway's configuration is %+v", r.Fix)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "src=\"http", "href=\"http", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the HTML page is not self-contained: it has %q", bad)
		}
	}
	if !bytes.Contains(page, []byte(hot)) || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("the HTML page lacks the hot pod or its chart")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDiagnoseBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"diagnose"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--admin", "http://127.0.0.1:15000"},
		{"diagnose", "--admin", "127.0.0.1:15000"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--since", "-5m"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--start", "yesterday"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--start", "2026-11-30T12:00:00Z", "--end", "2026-11-30T11:00:00Z"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--duration", "0s"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--timeout", "1h"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--context", "lab"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--namespace", "istio-system"},
		{"diagnose", "--selector", "istio in ("},
		{"diagnose", "--namespace", ""},
		{"diagnose", "--context", "lab", "--duration", "2h"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--hcm", "ingress http"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--listener", `0.0.0.0_80"}`},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--gateway", "nginx"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--gateway", "envoy-gateway"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--gateway", "istio", "--gateway-port", "70000"},
		{"diagnose", "--ztunnel", "http://127.0.0.1:15020/metrics"},
		{"diagnose", "--prometheus", "http://127.0.0.1:9", "--waypoint-admin", "http://127.0.0.1:15000"},
		{"diagnose", "--waypoint-admin", "127.0.0.1:15000"},
		{"diagnose", "--waypoint-admin", "http://127.0.0.1:15000", "--duration", "0s"},
		{"diagnose", "--admin", "http://127.0.0.1:15000", "--waypoint-pod-regex", "igw-test-waypoint-.*"},
		{"diagnose", "--ztunnel-pod-regex", "ztunnel-.*"},
	} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// TestDiagnoseAnyEnvoyCommand: igwlab diagnose --admin on a Consul sidecar's published stats page
// (served as its stats listener serves it) judges its two workers; --listener points it at
// another listener, and one the page does not have is an error that lists those it has.
func TestDiagnoseAnyEnvoyCommand(t *testing.T) {
	page, err := os.ReadFile(testutil.RealFixture(t, "envoy-consul-dataplane-sidecar-2workers-stats-prometheus-netdata.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/prometheus" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	run := func(extra ...string) (*diagnose.Report, error) {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), append([]string{"diagnose", "--admin", srv.URL, "--duration", "100ms", "--json"}, extra...), &stdout, &stderr)
		if err != nil {
			return nil, err
		}
		var r diagnose.Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("JSON: %v\n%s", err, stdout.String())
		}
		return &r, nil
	}
	r, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == diagnose.NotEnoughData || r.Chance == nil || r.Chance.K != 6507 || r.Chance.N != 2 || r.Names["listener"] != "10.50.132.6_20000" {
		t.Errorf("verdict %q on %v, chance %+v", r.Verdict, r.Names, r.Chance)
	}
	r, err = run("--listener", "0.0.0.0_20200")
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != diagnose.NotEnoughData || !strings.Contains(r.Summary, "took 4 connection(s) on listener 0.0.0.0_20200") {
		t.Errorf("--listener 0.0.0.0_20200: %q: %s", r.Verdict, r.Summary)
	}
	if _, err := run("--listener", "0.0.0.0_80"); err == nil || !strings.Contains(err.Error(), `no listener "0.0.0.0_80" in the stats (there are: 0.0.0.0_20200, 10.50.132.6_20000, 127.0.0.1_15001)`) {
		t.Errorf("a listener the page does not have: %v", err)
	}
}
