package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/stats"
)

// With dispatcher stats on, the worker that carries a shared connection's 500 streams runs its
// event loop without a pause (02-trigger's client): diagnose names it from the loop's own
// stats, its iterations far longer than the idle workers'.
func TestDiagnoseNamesThePeggedWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	p, err := emulator.Start(emulator.Config{Pods: 3, Workers: 2, Seed: placementSeed, DispatcherStats: true, Model: emulator.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Apply(emulator.Setup{})
	done := runLoad(t, p, load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 500, Path: "/bytes/16384"}, 4*time.Second)
	time.Sleep(time.Second)
	hot := ""
	for _, pod := range p.Pods() {
		for _, s := range pod.Store().All() {
			if strings.HasSuffix(s.Name, "downstream_cx_active") && strings.Contains(s.Name, ".worker_") && s.Value() > 0 {
				hot = pod.Name + "/" + s.Name[strings.Index(s.Name, "worker_"):strings.LastIndex(s.Name, ".")]
			}
		}
	}
	w, err := AdminSource{URLs: adminURLs(p), Duration: 2 * time.Second}.Window(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := Judge(w)
	<-done
	var text strings.Builder
	WriteText(&text, r)
	t.Log("\n" + text.String())
	if r.Pegged == "" || r.Pegged != hot {
		t.Fatalf("pegged %q, the connection is on %s", r.Pegged, hot)
	}
	if !strings.Contains(text.String(), "worker loop  pegged: "+hot+"'s event loop ran callbacks") {
		t.Errorf("no worker loop line naming %s", hot)
	}
	// The pegged worker's iterations against every idle worker's: at least ten times as long.
	deltas := make([]stats.Pod, len(w.Pods))
	for i, p := range w.Pods {
		deltas[i] = p.Delta
	}
	rows := stats.LoopRows(deltas, w.Span)
	for _, row := range rows[1:] {
		if rows[0].LoopP99 < 10*row.LoopP99 || rows[0].LoopP99 <= 0 {
			t.Errorf("iterations p99: pegged %.3f ms, %s/worker_%d %.3f ms: want ten times as long", rows[0].LoopP99, row.Pod, row.Worker, row.LoopP99)
		}
	}
}
