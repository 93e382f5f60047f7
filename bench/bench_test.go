package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/docsection"
)

func TestH2loadSummaryAndLog(t *testing.T) {
	out := []byte("finished in 5.00s, 36832.40 req/s, 2.71MB/s\nrequests: 184162 total, 184662 started, 184162 done, 184162 succeeded, 0 failed, 0 errored, 0 timeout\n")
	if n, err := h2loadSucceededCount(out); err != nil || n != 184162 {
		t.Errorf("succeeded = %d, %v", n, err)
	}
	bad := []byte("requests: 10 total, 10 started, 10 done, 8 succeeded, 2 failed, 0 errored, 0 timeout\n")
	if _, err := h2loadSucceededCount(bad); err == nil || !strings.Contains(err.Error(), "2 failed") {
		t.Errorf("failed requests not reported: %v", err)
	}
	if _, err := h2loadSucceededCount([]byte("garbage")); err == nil {
		t.Error("no summary accepted")
	}
	var log strings.Builder
	for i := 1; i <= 100; i++ { // start time, status, duration in us
		fmt.Fprintf(&log, "1700000000000000\t200\t%d\n", i*1000)
	}
	path := filepath.Join(t.TempDir(), "log.tsv")
	os.WriteFile(path, []byte(log.String()), 0o644)
	p50, p99, err := h2loadPercentiles(path)
	if err != nil || p50 != 51 || p99 != 100 {
		t.Errorf("p50 %v p99 %v (%v), want 51 and 100 ms", p50, p99, err)
	}
}

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := medianOf(tc.in); got != tc.want {
			t.Errorf("medianOf(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-only", "clients,speed"}, {"-rounds", "0"}, {"-m", "1"}, {"-duration", "10ms"}} {
		var out, errb bytes.Buffer
		if err := Run(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestClientBenchEndToEnd runs the comparison for real, briefly: the reference server, h2dial
// (built here), fortio in a child process and h2load.
func TestClientBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds h2dial and runs three clients")
	}
	h2load, err := exec.LookPath("h2load")
	if err != nil {
		t.Skip("no h2load (apt-get install nghttp2-client)")
	}
	dir := t.TempDir()
	self := filepath.Join(dir, "bench")
	h2dial := filepath.Join(dir, "h2dial")
	for bin, pkg := range map[string]string{self: "./cmd/bench", h2dial: "../h2dial/cmd/h2dial"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	o := Options{Self: self, H2dial: h2dial, H2load: h2load, Rounds: 1, Conns: 4, Streams: 32, ClientDuration: time.Second}
	res, err := clientBench(context.Background(), o, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Layouts {
		for _, c := range []string{"h2dial", "fortio", "h2load"} {
			m := l.Median[c]
			if m.Requests <= 0 || m.CPUS <= 0 || m.PerCPUS <= 0 || m.P99Ms < m.P50Ms {
				t.Errorf("%s %s: %+v", l.Name, c, m)
			}
		}
		if r := l.Ratios["h2dial_vs_h2load"].Median; r <= 0 {
			t.Errorf("%s ratio %v", l.Name, r)
		}
	}
}

// TestPerformanceDocIsTheLatestRun holds docs/performance.md's results table to the newest
// results file of a whole `make bench` run: the page's numbers are that file's, rendered.
func TestPerformanceDocIsTheLatestRun(t *testing.T) {
	const page = "../docs/performance.md"
	section, err := docsection.BodyOf(page, DocSection)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := LatestComplete("results")
	if err != nil {
		t.Fatal(err)
	}
	if latest == "" {
		t.Fatal("bench/results holds no run of every part: run make bench")
	}
	named := DocResultsFile(section)
	if want := "bench/" + filepath.ToSlash(latest); named != want {
		t.Fatalf("%s shows %q, the latest whole run is %s: run make bench, or ./bin/bench -render %s -docs docs/performance.md", page, named, want, want)
	}
	rep, err := LoadReport(latest)
	if err != nil {
		t.Fatal(err)
	}
	if want := Markdown(rep, named); section != want {
		t.Errorf("%s's %s section differs from %s rendered (./bin/bench -render %s -docs docs/performance.md rewrites it):\n--- page\n%s\n--- file\n%s", page, DocSection, named, named, section, want)
	}
}

func TestMarkdownNamesTheFileAndEveryGoal(t *testing.T) {
	r := &Report{Date: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), Cores: 2, Go: "go1.26.8", CPU: "cpu",
		Harness: &HarnessResult{Setup: "s", CapacityRPS: 22500, Steps: []HarnessStep{{OfferedRPS: 22500, EmulatorCPUUs: 40, ClientCPUUs: 20, P99Ms: 1.5, OK: true}}},
		Goals:   []Goal{{Name: "harness capacity (x)", Want: ">= 20000", Measured: 22500, Met: true}},
		Skipped: map[string]string{"flip": "no Pulumi CLI"}}
	md := Markdown(r, "bench/results/20261205T120000Z.json")
	if got := DocResultsFile(md); got != "bench/results/20261205T120000Z.json" {
		t.Errorf("file named: %q", got)
	}
	for _, want := range []string{"**22500 rps** (emulator 40 µs", ">= 20000, met", "| flip | skipped: no Pulumi CLI |", "2 cores (cpu), go1.26.8"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if r.Complete() {
		t.Error("a run without clients, suite and pool is not complete")
	}
}
