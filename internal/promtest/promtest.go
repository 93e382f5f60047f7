// Package promtest runs Debian's prometheus for tests: on loopback, scraping the targets it is
// given, with its data in the test's temporary folder.
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/igwlab/igwlab/dashboard"
)

// Start runs prometheus scraping targets every interval and returns its base URL once it is
// ready. Without a prometheus binary the test is skipped, or fails under CI, which installs it.
func Start(t testing.TB, interval time.Duration, targets []dashboard.ScrapeTarget) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no prometheus on PATH under CI (apt-get install prometheus)")
		}
		t.Skip("no prometheus on PATH (apt-get install prometheus)")
	}
	dir := t.TempDir()
	cfg, err := dashboard.ScrapeConfig(interval, targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	prom := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	prom.Stdout, prom.Stderr = logf, logf
	if err := prom.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = prom.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	})
	api := "http://" + addr
	WaitFor(t, 30*time.Second, "prometheus ready", func() bool {
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return api
}

func freeLoopbackAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitFor polls ok until it holds; past the limit it runs onFail (if any) and stops the test.
func WaitFor(t testing.TB, limit time.Duration, what string, ok func() bool, onFail ...func()) {
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

// Instant evaluates a query at now through the HTTP API and returns the vector's values.
func Instant(api, expr string) ([]float64, error) {
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

// LabelValues lists a label's values among the series a selector matches.
func LabelValues(api, label, selector string) ([]string, error) {
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
