package cli

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/report"
	"github.com/igwlab/igwlab/runner/report/reporttest"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/suite/suitetest"
)

// checkLocalSuite checks, on a local suite run (the newcomer's `make run`, TestNewcomerPath),
// the directions the lab claims for its robust findings, the files a run writes, and that
// `igwlab report` redraws its plots. Placement is random, so every check is one that holds
// whatever pods the connections land on.
func checkLocalSuite(t *testing.T, sum *suite.Summary, dir string) {
	t.Helper()
	if sum.Target != "local" || sum.Pods != 6 || sum.Concurrency != 1 || !sum.Complete {
		t.Fatalf("summary header %+v", sum)
	}
	get := func(name string) *analysis.Result {
		r := sum.Scenarios[name]
		if r == nil || r.Status != "ok" {
			t.Fatalf("%s: %+v", name, r)
		}
		return r
	}
	s1, s2 := get("01-baseline"), get("02-trigger")
	if s2.CV < 2*s1.CV {
		t.Errorf("H-A: s2 CV %.3f < 2 x s1 CV %.3f", s2.CV, s1.CV)
	}
	f2, f3 := get("02-fortio"), get("03-fortio")
	if f3.ConnectionsTotal != f2.ConnectionsTotal || f2.ConnectionsTotal != 2 {
		t.Errorf("H-B: fortio opened %v then %v connections under the cap, want 2 and 2", f2.ConnectionsTotal, f3.ConnectionsTotal)
	}
	if f3.ChanceVerdict != analysis.WithinChance {
		t.Errorf("03-fortio CV %.3f is %s for k=%v", f3.CV, f3.ChanceVerdict, f3.ConnectionsTotal)
	}
	f4 := get("04-fortio")
	if f4.GoAways == 0 || f4.CV > 0.5*f2.CV {
		t.Errorf("H-C fortio: %v GOAWAYs, CV %.3f vs 02-fortio %.3f (want <= half)", f4.GoAways, f4.CV, f2.CV)
	}
	s4 := get("04-mrpc")
	if s4.GoAways == 0 || s4.MaxRequestsReached == 0 || s4.CV >= s2.CV {
		t.Errorf("H-C h2dial: %v GOAWAYs, CV %.3f vs 02-trigger %.3f", s4.GoAways, s4.CV, s2.CV)
	}
	s12 := get("12-grpc-variant")
	if s12.ConnectionsTotal != 1 || math.Abs(s12.CV-math.Sqrt(5)) > 1e-3 || s12.Requests == 0 {
		t.Errorf("S12: %v connections, CV %.4f, %d requests", s12.ConnectionsTotal, s12.CV, s12.Requests)
	}
	if s10 := get("10-rotation"); s10.MaxDurationReached == 0 {
		t.Errorf("S10: downstream_cx_max_duration_reached is 0")
	}
	if v := sum.Hypotheses["H-A"]; v.Verdict != analysis.Pass {
		t.Errorf("H-A verdict %+v", v)
	}

	// The results folder holds what the lab always wrote, plus ours.
	for _, f := range []string{"summary.json", "02-trigger/cv.txt", "02-trigger/worker_cv_per_pod.txt",
		"02-trigger/timeseries.csv", "02-trigger/h2dial.json", "02-trigger/h2dial.txt", "02-fortio/fortio.json",
		"12-grpc-variant/grpc.json", "02-trigger/cx_http2_total_per_pod.txt", "02-trigger/scenario.yaml",
		"04-fortio/scenario.yaml", "02-trigger/result.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("results lack %s: %v", f, err)
		}
	}
	ts, _ := os.ReadFile(filepath.Join(dir, "02-trigger", "timeseries.csv"))
	if lines := strings.Count(string(ts), "\n"); lines < 5 {
		t.Errorf("timeseries.csv has %d lines", lines)
	}
	sc, _ := os.ReadFile(filepath.Join(dir, "04-fortio", "scenario.yaml"))
	if !strings.Contains(string(sc), "local_departures") || !strings.Contains(string(sc), "10000") {
		t.Errorf("04-fortio/scenario.yaml does not show the lab value beside the local one:\n%s", sc)
	}

	checkWindowsCarryOnlyTheirConnections(t, dir, map[string]float64{"02-trigger": 1, "12-grpc-variant": 1, "02-fortio": 2, "03-fortio": 2})
	suitetest.CheckVerdictsNeedNoEmulatorStats(t, dir, true)
	checkReport(t, dir)
}

// checkWindowsCarryOnlyTheirConnections reads each scenario's time series: every row was
// measured under load (no trailing row of zeros), and where the client keeps a fixed number of
// connections, that is all the gateway held while it ran: no warm-up's connection sat on a pod
// through the window.
func checkWindowsCarryOnlyTheirConnections(t *testing.T, dir string, fixed map[string]float64) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		ts, err := report.ReadSeries(filepath.Join(dir, e.Name(), "timeseries.csv"))
		if err != nil {
			continue
		}
		rps, active := ts.Column("rps"), ts.Column("sum_cx")
		if len(rps) == 0 {
			t.Errorf("%s: empty time series", e.Name())
			continue
		}
		if last := len(rps) - 1; rps[last] == 0 && active[last] == 0 {
			t.Errorf("%s: the time series ends in a row of zeros (%d rows)", e.Name(), len(rps))
		}
		if want, ok := fixed[e.Name()]; ok {
			for i, n := range active {
				if n != want {
					t.Errorf("%s: second %d of the window had %v connections open on the gateway, want the client's %v", e.Name(), i+1, n, want)
					break
				}
			}
		}
	}
}

// checkReport checks the suite drew its plots and report, that `igwlab report` makes the same
// plots again from the raw results byte for byte, and that the report renders in a browser.
func checkReport(t *testing.T, dir string) {
	t.Helper()
	first := map[string][]byte{}
	for _, name := range []string{"cv_across_scenarios.png", "per_pod_connections.png", "goaway_rate.png",
		"p99_comparison.png", "worker_cv.png", "timeseries_04-mrpc.png", "timeseries_04-fortio.png", "timeseries_10-rotation.png"} {
		b, err := os.ReadFile(filepath.Join(dir, "plots", name))
		if err != nil || len(b) == 0 {
			t.Errorf("suite did not draw %s: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "plots"))
	for _, e := range entries {
		first[e.Name()], _ = os.ReadFile(filepath.Join(dir, "plots", e.Name()))
	}
	if err := os.RemoveAll(filepath.Join(dir, "plots")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"report", dir}, &stdout, &stderr); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	for name, want := range first {
		got, err := os.ReadFile(filepath.Join(dir, "plots", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("igwlab report did not reproduce %s byte for byte (%v)", name, err)
		}
	}
	if !strings.Contains(stdout.String(), "report.html") {
		t.Errorf("report printed %q", stdout.String())
	}
	reporttest.AssertRenders(t, filepath.Join(dir, "report.html"), len(first))
}
