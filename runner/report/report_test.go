package report

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/report/reporttest"
)

// testdata/run is a saved local run, cut down to what the report reads: summary.json and each
// scenario's timeseries.csv and scenario.yaml.
const fixture = "testdata/run"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

func load(t *testing.T) *Run {
	t.Helper()
	r, err := Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPlotsFromSavedResults draws every plot from the saved folder and pins each PNG's
// SHA-256: the same raw results give the same images, byte for byte.
func TestPlotsFromSavedResults(t *testing.T) {
	plots, err := Plots(load(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cv_across_scenarios.png", "per_pod_connections.png", "goaway_rate.png", "p99_comparison.png",
		"worker_cv.png", "flow_control_pauses.png", "timeseries_04-mrpc.png", "timeseries_04-fortio.png", "timeseries_10-rotation.png"}
	have := map[string]bool{}
	var sums strings.Builder
	for _, p := range plots {
		have[p.Name] = true
		img, err := png.Decode(bytes.NewReader(p.PNG))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
			t.Errorf("%s is %dx%d", p.Name, b.Dx(), b.Dy())
		}
		if p.Title == "" || p.Caption == "" {
			t.Errorf("%s has no title or caption", p.Name)
		}
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(p.PNG), p.Name)
	}
	for _, n := range want {
		if !have[n] {
			t.Errorf("no %s among %d plots", n, len(plots))
		}
	}
	golden(t, "plots.sha256", []byte(sums.String()))

	again, err := Plots(load(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range plots {
		if !bytes.Equal(plots[i].PNG, again[i].PNG) {
			t.Errorf("%s differs between two renderings of the same results", plots[i].Name)
		}
	}
}

// TestWriteReportIsSelfContained checks report.html needs nothing but itself: every image
// inline, no address outside the file, and every scenario and call on the page.
func TestWriteReportIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	r := load(t)
	plots, err := Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	if n := strings.Count(page, `<img src="data:image/png;base64,`); n != len(plots) {
		t.Errorf("%d inline images for %d plots", n, len(plots))
	}
	if ext := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:|//)|url\(\s*['"]?(https?:|//)|@import`).FindString(page); ext != "" {
		t.Errorf("report.html reaches outside itself: %q", ext)
	}
	for _, n := range r.Order {
		if r.Scenarios[n] != nil && !strings.Contains(page, "<b>"+n+"</b>") {
			t.Errorf("scenario %s missing from the report", n)
		}
	}
	for _, v := range r.Evaluation {
		if !strings.Contains(page, "<b>"+v.ID+"</b>") {
			t.Errorf("call %s missing from the report", v.ID)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "plots"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != len(plots) {
		t.Errorf("plots folder holds %v", names)
	}
}

func TestReportRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a headless browser")
	}
	dir := t.TempDir()
	plots, err := Write(dir, load(t))
	if err != nil {
		t.Fatal(err)
	}
	reporttest.AssertRenders(t, filepath.Join(dir, "report.html"), len(plots))
}

func TestCompareGolden(t *testing.T) {
	a := load(t)
	b := load(t)
	// A second run in which the rotation knob did nothing, to show a difference side by side.
	s := *b.Scenarios["04-mrpc"]
	s.CV, s.GoAways = 2.236, 0
	b.Scenarios["04-mrpc"] = &s
	delete(b.Scenarios, "12-grpc-variant")
	var out bytes.Buffer
	if err := Compare(&out, a, b, "results/A", "results/B"); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt", out.Bytes())
}

func TestLoadRejectsNonResults(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a results folder") {
		t.Errorf("Load(empty) = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("Load(bad json) = %v", err)
	}
}
