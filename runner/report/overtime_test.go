package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
)

// A pod that appears mid-window has empty cells before it: they read as NaN, keep the
// columns aligned, and the share plot draws the pool with its events marked.
func TestOverTimePlotFromASeriesWithANewPod(t *testing.T) {
	csv := "timestamp,elapsed_s,cv,cv_cx_active,cv_rps,sum_cx,sum_rq,rps,closed,busy_max,p99_ms,cx_active:a,cx_active:b,rps:a,rps:b\n" +
		"1,0.25,0,0,0,4,10,40,0,0.1,1,4,,40.0,\n" +
		"2,0.50,0,0,0,4,20,40,0,0.1,1,4,0,40.0,0.0\n" +
		"3,0.75,0,0,0,4,30,40,2,0.1,1,2,2,20.0,20.0\n"
	path := filepath.Join(t.TempDir(), "timeseries.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSeries(path)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Column("rps:b")
	if len(b) != 3 || !math.IsNaN(b[0]) || b[2] != 20 {
		t.Fatalf("rps:b read as %v, want [NaN 0 20]", b)
	}
	res := &analysis.Result{Name: "15-scale-out", Status: analysis.StatusOK, OverTime: &analysis.OverTime{
		NewPods: []string{"b"}, Events: []analysis.Mark{{At: 400 * time.Millisecond, Kind: "scale"}, {At: 500 * time.Millisecond, Kind: "ready", Pod: "b"}}}}
	p, err := sharePlot(res, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(p.PNG)); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if want := "dashed lines mark scale at 0.4 s ("; !bytes.Contains([]byte(p.Caption), []byte(want)) {
		t.Fatalf("caption %q does not mark the scale-out alone (%q)", p.Caption, want)
	}
}
