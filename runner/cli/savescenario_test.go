package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/stacks"
)

// TestSaveScenario: a live local pool under a known client (one gRPC ClientConn; h2dial's
// shared transport at a stream cap; many connections), read by diagnose --admin
// --save-scenario, gives a scenario that loads, names the client's kind, and whose run
// spreads its connections as the pool did against chance.
func TestSaveScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds per client")
	}
	for _, c := range []struct {
		name     string
		knob     string // a knob the pool runs with ("" none)
		spec     load.Spec
		wantKind string
		wantMode string
		wantText string // in the evidence
	}{
		{"saved-grpc", "", load.Spec{Kind: "grpc", Concurrency: 50, Connections: 1, Authority: "grpcbin.igw-test"}, "grpc", "unary", "ClientConn"},
		{"saved-capped", "hcm.http2_protocol_options.max_concurrent_streams=20", load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 100, Path: "/delay/0.05"}, "h2dial", "shared", "dials"},
		{"saved-many", "", load.Spec{Kind: "h2dial", Mode: "distinct", Concurrency: 60, Path: "/bytes/2048", QPS: 1500}, "h2dial", "distinct", "its own connection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := emulatortest.Gateways(t, 6, 1, 7)
			if c.knob != "" {
				var k stacks.Knobs
				if _, err := stacks.ParseKnobSetting(&k, c.knob); err != nil {
					t.Fatal(err)
				}
				p.Apply(emulator.Setup{Knobs: k})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			spec := c.spec
			spec.Target, spec.Duration = p.VIP(), 6*time.Second
			go func() {
				_, err := load.Run(ctx, spec)
				done <- err
			}()
			time.Sleep(time.Second)
			var urls []string
			for _, pod := range p.Pods() {
				urls = append(urls, pod.AdminURL())
			}
			dir := t.TempDir()
			file := filepath.Join(dir, c.name+".yaml")
			var stdout, stderr bytes.Buffer
			if err := Run(context.Background(), []string{"diagnose", "--admin", strings.Join(urls, ","), "--duration", "2s", "--save-scenario", file}, &stdout, &stderr); err != nil {
				t.Fatalf("diagnose: %v\n%s", err, stderr.String())
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := stacks.ParseFile(file, b)
			if err != nil {
				t.Fatalf("the saved scenario does not load: %v\n%s", err, b)
			}
			d := sc.Diagnosed
			if sc.Client.Kind != c.wantKind || sc.Client.Mode != c.wantMode || d == nil || d.Client != c.wantKind ||
				!strings.Contains(strings.Join(d.Evidence, "; "), c.wantText) {
				t.Fatalf("client %s/%s, diagnosed %+v; want %s/%s with %q in the evidence\n%s", sc.Client.Kind, sc.Client.Mode, d, c.wantKind, c.wantMode, c.wantText, b)
			}
			if sc.Pool.Replicas != 6 || sc.Pool.Concurrency != 1 || len(d.Unread) == 0 {
				t.Errorf("pool %+v, unread %+v: want 6 pods of 1 worker and what was not read named", sc.Pool, d.Unread)
			}
			if c.knob != "" && !strings.Contains(string(b), "max_concurrent_streams: 20") {
				t.Errorf("the stream cap in force is not in the scenario:\n%s", b)
			}
			sum, _ := runSuite(t, "--target", "sim", "--catalog", dir, "--only", c.name, "--seed", "3")
			r := sum.Scenarios[c.name]
			if r == nil {
				t.Fatalf("no result for %s: %+v", c.name, sum.Order)
			}
			if r.ChanceVerdict != d.Chance {
				t.Errorf("the saved scenario's run spreads %.0f connections %s (CV %.3f); the pool spread %.0f %s (CV %.3f)\n%s",
					r.ConnectionsTotal, r.ChanceVerdict, r.CV, d.Connections, d.Chance, d.CVConnections, b)
			}
		})
	}
}
