package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/stats"
)

// TestNamesMissingWorkerStats: pages without per-worker stats (Istio's default stats matcher)
// are read, and the report says the worker spread was not measured and what to include.
func TestNamesMissingWorkerStats(t *testing.T) {
	dir := testutil.Untar(t, filepath.Join("..", "suite", "testdata", "fullrun.tar.gz"))
	read := func(phase string) []stats.Snapshot {
		files, _ := filepath.Glob(filepath.Join(dir, "02-trigger", phase, "*.prom"))
		var out []stats.Snapshot
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.Contains(line, "listener_worker_") {
					kept = append(kept, line)
				}
			}
			s, err := stats.ParseSnapshot(strings.TrimSuffix(filepath.Base(f), ".prom"), time.Time{}, []byte(strings.Join(kept, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	w, err := windowFrom("files", read("stats_pre"), read("stats_post"), 8*time.Second, stats.Pick{})
	if err != nil {
		t.Fatal(err)
	}
	if r := Judge(w); r.Verdict != FewConnections || !strings.Contains(strings.Join(r.Notes, " "), `per-worker stats not exposed: no listener.0.0.0.0_80.worker_<N>.downstream_cx_total`) ||
		!strings.Contains(strings.Join(r.Notes, " "), `add the regex listener\..* to proxyStatsMatcher.inclusionRegexps`) {
		t.Errorf("%s; notes %q", r.Verdict, r.Notes)
	}
}
