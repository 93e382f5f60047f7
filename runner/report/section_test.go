package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSectionWithSweepAndCapacityPlots: a sweep's and a capacity search's plots decode as PNGs
// (a log axis included, and a run without a latency left off it), and their section page holds
// them inline, with its table and blocks escaped.
func TestSectionWithSweepAndCapacityPlots(t *testing.T) {
	sweep, err := SweepPlot("max_requests_per_connection", "drains per second", []SweepPoint{
		{X: 30, CV: 0.14, Lo: 0.06, Median: 0.13, Hi: 0.23, Cost: 27},
		{X: 300, CV: 0.21, Lo: 0.18, Median: 0.37, Hi: 0.63, Cost: 3.2},
		{X: 3000, CV: 1.66, Lo: 0.71, Median: 1.12, Hi: 1.66, Cost: 0.25},
	}, 0.358)
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := CapacityPlot("p99 <= 100 ms", 100, []Curve{
		{Name: "without", X: []float64{500, 1000, 2000}, Y: []float64{25, 94, 352}},
		{Name: "with", X: []float64{500, 1000, 2000}, Y: []float64{21, 0, 161}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Plot{sweep, capacity} {
		if _, err := png.Decode(bytes.NewReader(p.PNG)); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	dir := t.TempDir()
	if err := WriteSection(dir, Section{Title: "Sweep", Header: []string{"value", "CV"}, Rows: [][]string{{"30", "0.140"}},
		Plots: []Plot{sweep, capacity}, Blocks: []Block{{Heading: "EnvoyFilter", Text: "a: <b>"}}}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `src="data:image/png;base64,`); n != 2 || !strings.Contains(string(html), "a: &lt;b&gt;") ||
		!strings.Contains(string(html), "<td>0.140</td>") || !strings.Contains(string(html), "<style>") {
		t.Errorf("%d inline images; page:\n%s", n, html[:min(len(html), 2000)])
	}
	for _, f := range []string{"sweep.png", "capacity.png"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil {
			t.Error(err)
		}
	}
}
