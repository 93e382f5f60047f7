package load

import (
	"context"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
)

// TestClientsLeaveNoConnectionOpen: a client run ends with its connections closed, as the lab's
// client processes' do when they exit. A connection left open (a warm-up's, say) would sit on
// a pod through the next measured window and skew its spread.
func TestClientsLeaveNoConnectionOpen(t *testing.T) {
	pool, err := emulator.Start(emulator.Config{Pods: 3, Workers: 1, WaypointPods: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pool.Apply(emulator.Setup{})
	for _, s := range []Spec{
		// 500 streams on one connection, as in 02-trigger, with small bodies so a starved
		// machine still completes requests within the run.
		{Kind: "h2dial", Mode: "shared", Concurrency: 500, Path: "/bytes/1024"},
		{Kind: "h2dial", Mode: "distinct", Concurrency: 8, Path: "/get"},
		{Kind: "fortio", Concurrency: 2, QPS: 200, Path: "/get"},
		{Kind: "grpc", Concurrency: 10, Connections: 1},
	} {
		s.Target, s.Duration = pool.VIP(), 2*time.Second
		name := s.Kind + "/" + s.Mode
		r, err := Run(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Requests == 0 {
			t.Fatalf("%s: no requests", name)
		}
		open := 0
		deadline := time.Now().Add(time.Second)
		for {
			open = 0
			for _, p := range pool.Pods() {
				open += p.OpenConnections()
			}
			if open == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if open != 0 {
			t.Errorf("%s: %d connection(s) still open on the gateway a second after the run returned", name, open)
		}
	}
}
