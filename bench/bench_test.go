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
