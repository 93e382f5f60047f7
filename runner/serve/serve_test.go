package serve

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// TestServeClassifiesClients points real clients at igwlab serve and checks what it says about
// them: h2dial dials at the stream cap, a gRPC ClientConn queues, and both come back after a
// GOAWAY.
func TestServeClassifiesClients(t *testing.T) {
	if testing.Short() {
		t.Skip("drives real clients for a few seconds")
	}
	cases := []struct {
		name   string
		spec   load.Spec
		knobs  []string
		stream string
		goaway string
	}{
		{"h2dial dials", load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 60, Path: "/get"},
			[]string{"hcm.http2_protocol_options.max_concurrent_streams", "10"}, "DIALS", "NO GOAWAY"},
		{"grpc queues", load.Spec{Kind: "grpc", Concurrency: 60, Connections: 1, Authority: "grpcbin.igw-test"},
			[]string{"hcm.http2_protocol_options.max_concurrent_streams", "10"}, "QUEUES", "NO GOAWAY"},
		{"fortio reconnects", load.Spec{Kind: "fortio", Concurrency: 2, QPS: 1000, Path: "/get"},
			[]string{"hcm.common_http_protocol_options.max_requests_per_connection", "100"}, "NEVER AT CAP", "RECONNECTS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := local.NewLocal(emulator.Config{Pods: 3, Workers: 1, WaypointPods: 0})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var k stacks.Knobs
			spec, _ := stacks.Lookup(c.knobs[0])
			if err := spec.Set(&k, c.knobs[1]); err != nil {
				t.Fatal(err)
			}
			sc := &stacks.Scenario{Name: "test", Knobs: k}
			ctx, cancel := context.WithCancel(context.Background())
			var out bytes.Buffer
			done := make(chan *suite.Summary)
			go func() {
				sum, err := Run(ctx, Options{Local: l, Scenario: sc, OutDir: t.TempDir(), Out: &out, Interval: 200 * time.Millisecond})
				if err != nil {
					t.Error(err)
				}
				done <- sum
			}()
			time.Sleep(300 * time.Millisecond)
			c.spec.Duration = 1500 * time.Millisecond
			if _, err := l.Load(context.Background(), c.spec); err != nil {
				t.Fatal(err)
			}
			cancel()
			sum := <-done
			if sum == nil {
				t.Fatal("no summary")
			}
			if v := sum.Hypotheses["stream-cap"].Verdict; v != c.stream {
				t.Errorf("stream cap: %s (%s), want %s", v, sum.Hypotheses["stream-cap"].Detail, c.stream)
			}
			if v := sum.Hypotheses["goaway"].Verdict; v != c.goaway {
				t.Errorf("goaway: %s (%s), want %s", v, sum.Hypotheses["goaway"].Detail, c.goaway)
			}
			if !strings.Contains(out.String(), "gateway VIP (h2c, prior knowledge): http://127.0.0.1:") {
				t.Errorf("serve output:\n%s", out.String())
			}
			if sum.Scenarios["serve"].ConnectionsTotal == 0 {
				t.Errorf("no connections counted")
			}
		})
	}
}

// cancelOnLine is serve's output, which presses Ctrl-C (cancels) the moment a line with
// prefix is written.
type cancelOnLine struct {
	bytes.Buffer
	prefix string
	cancel context.CancelFunc
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), w.prefix) {
		w.cancel()
	}
	return w.Buffer.Write(p)
}

// TestCtrlCRightAfterTheLineSayingSo: a Ctrl-C the moment serve says Ctrl-C stops it ends the
// run cleanly, with its results, as a user (or a test harness) pressing it at once expects.
func TestCtrlCRightAfterTheLineSayingSo(t *testing.T) {
	l, err := local.NewLocal(emulator.Config{Pods: 2, Workers: 1, WaypointPods: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnLine{prefix: "press Ctrl-C", cancel: cancel}
	sum, err := Run(ctx, Options{Local: l, Scenario: &stacks.Scenario{Name: "test"}, OutDir: t.TempDir(), Out: out, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("serve ended with %v\n%s", err, out.String())
	}
	if sum == nil || sum.Scenarios["serve"] == nil {
		t.Fatalf("no results for the run:\n%s", out.String())
	}
}
