package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/load"
)

// limitedPool starts pods gateway pods of workers workers under a CPU limit (millicores). A
// request costs ten times the default model's work, so a few hundred requests a second keep
// every worker busy whatever else the machine is doing: the test is about the quota, not
// about how fast this machine can drive load.
func limitedPool(t *testing.T, pods, workers int, limit int64) *emulator.Pool {
	t.Helper()
	m := emulator.DefaultModel
	m.ServiceTime *= 10
	p, err := emulator.Start(emulator.Config{Pods: pods, Workers: workers, CPULimit: limit, Seed: placementSeed, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Apply(emulator.Setup{})
	return p
}

func watch(t *testing.T, p *emulator.Pool, cadvisor bool, d time.Duration) *Report {
	t.Helper()
	src := AdminSource{URLs: adminURLs(p), Duration: d}
	if cadvisor {
		src.CAdvisor = []string{p.KubeletURL() + "/metrics/cadvisor"}
	}
	r, _ := judged(t, src)
	return r
}

// Eight busy workers under a limit of two cores are throttled, and diagnose says so from the
// node's cAdvisor metrics: the workers past the limit add throttling, not capacity. Two
// workers under the same limit are never held back.
func TestDiagnoseReadsWorkersAgainstTheCPULimit(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	for _, c := range []struct {
		workers   int
		throttled bool
	}{{8, true}, {2, false}} {
		p := limitedPool(t, 2, c.workers, 2000)
		done := runLoad(t, p, load.Spec{Kind: "h2dial", Mode: "distinct", Concurrency: 200, Path: "/get"}, 3*time.Second)
		time.Sleep(500 * time.Millisecond)
		r := watch(t, p, true, 2*time.Second)
		<-done
		lines := strings.Join(r.CPU, "\n")
		if !strings.Contains(lines, "under a CPU limit of 2 cores") {
			t.Fatalf("%d workers: cpu lines %q", c.workers, lines)
		}
		past := strings.Contains(strings.Join(r.NoEffect, "\n"), "more workers (concurrency)")
		if past != c.throttled || strings.Contains(lines, "more workers than cores") != c.throttled {
			t.Errorf("%d workers under 2 cores: no effect %q, cpu %q", c.workers, r.NoEffect, lines)
		}
	}
	// Without the node's metrics, nothing is said of CPU limits.
	p := limitedPool(t, 2, 1, 0)
	if r := watch(t, p, false, 200*time.Millisecond); len(r.CPU) != 0 {
		t.Errorf("cpu lines without cAdvisor: %q", r.CPU)
	}
}

// Long-lived streams begin few requests: diagnose judges their load by the bytes they carry,
// calls them long-lived, says rotation alone will not move them, and proposes
// max_stream_duration with count rotation beside it.
func TestDiagnoseSeesLongLivedStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("holds streams for a few seconds")
	}
	p := startPool(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := grpclab.Run(context.Background(), grpclab.Options{Target: p.VIP(), Authority: "grpcbin.igw-test", Concurrency: 20,
			Duration: 4 * time.Second, Mode: grpclab.ServerStream, Rate: 20, MessageBytes: 512})
		if err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(time.Second)
	r := watch(t, p, false, 2*time.Second)
	<-done
	if r.Streams == nil || !r.Streams.LongLived || r.LoadBy == "" {
		t.Fatalf("streams %+v, load by %q: want long-lived streams judged by bytes", r.Streams, r.LoadBy)
	}
	if r.Verdict != FewConnections {
		t.Errorf("verdict %s (%s): one connection carries every stream", r.Verdict, r.Summary)
	}
	if !strings.Contains(strings.Join(r.NoEffect, "\n"), "rotation alone") {
		t.Errorf("no effect %q: want rotation named", r.NoEffect)
	}
	if l := r.Lever; l == nil || l.Knob != knobStreamDuration || !strings.Contains(l.EnvoyFilter, "max_requests_per_connection") ||
		!strings.Contains(l.Preview, "--set "+knobStreamDuration+"=60s") {
		t.Errorf("lever %+v: want max_stream_duration with count rotation in its EnvoyFilter", l)
	}
}
