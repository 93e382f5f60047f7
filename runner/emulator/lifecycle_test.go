package emulator

import (
	"context"
	"testing"
	"time"
)

// serving lists the pods the Service sends new connections to.
func serving(p *Pool) (names []string) {
	for _, pod := range p.Pods() {
		if pod.Serving() {
			names = append(names, pod.Name)
		}
	}
	return names
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestScaleOutWaitsForReadinessAndScaleInDrains(t *testing.T) {
	p, err := Start(Config{Pods: 4, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.SetReplicas(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := len(serving(p)); got != 2 || p.Replicas() != 2 {
		t.Fatalf("after SetReplicas(2): %d serving, %d replicas", got, p.Replicas())
	}
	lc := Lifecycle{ReadyDelay: 200 * time.Millisecond, TerminationDrain: 300 * time.Millisecond}
	if err := p.ScaleTo(4, lc); err != nil {
		t.Fatal(err)
	}
	if got := len(serving(p)); got != 2 {
		t.Fatalf("new pods served before their readiness delay: %d serving", got)
	}
	waitFor(t, "the new pods to turn ready", func() bool { return len(serving(p)) == 4 })

	if err := p.ScaleTo(1, lc); err != nil {
		t.Fatal(err)
	}
	if got := p.Replicas(); got != 1 {
		t.Fatalf("after ScaleTo(1): %d replicas", got)
	}
	if err := p.waitLifecycle(ctx); err != nil {
		t.Fatal(err)
	}
	exists := 0
	for _, pod := range p.Pods() {
		if pod.Exists() {
			exists++
		}
	}
	if exists != 1 {
		t.Fatalf("%d pods exist after the scale-in's terminations ended, want 1", exists)
	}
	kinds := map[string]int{}
	for _, e := range p.Events() {
		if e.Planned {
			kinds[e.Kind]++
		}
	}
	if kinds["start"] != 2 || kinds["ready"] != 2 || kinds["terminate"] != 3 || kinds["gone"] != 3 {
		t.Fatalf("recorded steps %v, want 2 starts, 2 ready, 3 terminate, 3 gone", kinds)
	}
}

func TestRollingRestartKeepsAvailability(t *testing.T) {
	p, err := Start(Config{Pods: 6, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.SetReplicas(ctx, 3); err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, n := range serving(p) {
		old[n] = true
	}
	lc := Lifecycle{ReadyDelay: 100 * time.Millisecond, TerminationDrain: 150 * time.Millisecond}
	// 25% of 3: surge rounds up to 1, unavailable down to 0 (stacks.Restart.Fenceposts).
	if err := p.RollingRestart(ctx, 1, 0, lc); err != nil {
		t.Fatal(err)
	}
	minServing, maxExisting := 3, 0
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s := serving(p)
		minServing = min(minServing, len(s))
		n := 0
		for _, pod := range p.Pods() {
			pod.mu.Lock()
			if !pod.absent && !pod.terminating {
				n++
			}
			pod.mu.Unlock()
		}
		maxExisting = max(maxExisting, n)
		done := len(s) == 3
		for _, name := range s {
			done = done && !old[name]
		}
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, name := range serving(p) {
		if old[name] {
			t.Fatalf("old pod %s still serving after the rollout", name)
		}
	}
	if minServing < 3 {
		t.Errorf("maxUnavailable 0, yet only %d pods were serving at one point", minServing)
	}
	if maxExisting > 4 {
		t.Errorf("maxSurge 1, yet %d pods (not terminating) existed at once", maxExisting)
	}
	if err := p.waitLifecycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.SetReplicas(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if got := len(serving(p)); got != 6 {
		t.Fatalf("SetReplicas(6) after the rollout: %d serving", got)
	}
}
