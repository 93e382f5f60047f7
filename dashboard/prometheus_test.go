package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/target"
)

// TestDashboardAgainstRealPrometheus starts Debian's prometheus scraping the emulated pool
// (TLS, two workers per pod) while one HTTP/2 connection carries a closed-loop load, then asks
// Prometheus for every dashboard query and every variable: each must return series, and the
// leading-indicator panel must show the single connection's spread, sqrt(n-1).
func TestDashboardAgainstRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and a local pool")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no prometheus on PATH under CI (apt-get install prometheus)")
		}
		t.Skip("no prometheus on PATH (apt-get install prometheus)")
	}
	const pods = 6
	l, err := target.NewLocal(emulator.Config{Pods: pods, Workers: 2, WaypointPods: 3, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	dir := t.TempDir()
	cfg, err := dashboard.ScrapeConfig(time.Second, l.ScrapeTargets())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prom := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	prom.Stdout, prom.Stderr = logf, logf
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = prom.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	}()
	api := "http://" + addr
	waitFor(t, 30*time.Second, "prometheus ready", func() bool {
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

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
	waitFor(t, 60*time.Second, "a loaded scrape", func() bool {
		v, err := instant(api, `sum(rate(envoy_http_downstream_rq_total{http_conn_manager_prefix="`+vars["hcm"]+`"}[1m]))`)
		if err != nil || len(v) == 0 || v[0] <= 0 {
			return false
		}
		c, err := instant(api, cv)
		return err == nil && len(c) == 1 && c[0] > 0
	})

	// Each target is scraped on its own schedule, so a rate() may need another scrape or two
	// before it has two samples; ask again until every query answers or a minute has passed.
	var missing []string
	waitFor(t, 60*time.Second, "series for every panel", func() bool {
		missing = missing[:0]
		for _, q := range dashboard.Queries() {
			expr := dashboard.Expand(q.Expr, vars)
			if v, err := instant(api, expr); err != nil || len(v) == 0 {
				missing = append(missing, fmt.Sprintf("panel %q: %d series, %v\n%s", q.Panel, len(v), err, expr))
			}
		}
		return len(missing) == 0
	}, func() { t.Errorf("after a minute:\n%s", strings.Join(missing, "\n")) })
	c, err := instant(api, cv)
	if err != nil || len(c) != 1 || math.Abs(c[0]-math.Sqrt(pods-1)) > 1e-6 {
		t.Errorf("CV panel = %v (%v), want sqrt(%d) = %.4f for one connection", c, err, pods-1, math.Sqrt(pods-1))
	}
	active, err := instant(api, dashboard.Expand(`sum(envoy_http_downstream_cx_active{`+dashboard.H+`})`, vars))
	if err != nil || len(active) != 1 || active[0] != 1 {
		t.Errorf("active connections across pods = %v (%v), want 1", active, err)
	}
	for _, v := range dashboard.Variables {
		if v.Regex {
			continue
		}
		values, err := labelValues(api, v.LabelName, v.Selector)
		if err != nil || !slices.Contains(values, vars[v.Name]) {
			t.Errorf("variable %s: label_values(%s, %s) = %v (%v), want %q among them", v.Name, v.Selector, v.LabelName, values, err, vars[v.Name])
		}
	}
	stopLoad()
	if err := <-done; err != nil {
		t.Errorf("load: %v", err)
	}
}

func freeLoopbackAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls ok until it holds; past the limit it runs onFail (if any) and stops the test.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool, onFail ...func()) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			for _, f := range onFail {
				f()
			}
			t.Fatalf("no %s within %s", what, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// instant evaluates a query at now through the HTTP API and returns the vector's values.
func instant(api, expr string) ([]float64, error) {
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		}
	}
	if err := getJSON(api+"/api/v1/query?query="+url.QueryEscape(expr), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" || body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("status %s, type %s: %s", body.Status, body.Data.ResultType, body.Error)
	}
	var out []float64
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %w", r.Value[1], err)
		}
		out = append(out, f)
	}
	return out, nil
}

func labelValues(api, label, selector string) ([]string, error) {
	var body struct {
		Status string
		Data   []string
	}
	err := getJSON(api+"/api/v1/label/"+label+"/values?match[]="+url.QueryEscape(selector), &body)
	return body.Data, err
}

func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", u, resp.StatusCode, err)
	}
	return nil
}
