package local

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/stacks"
)

// SetReplicas implements gateway.Evented.
func (l *Local) SetReplicas(ctx context.Context, n int) error {
	if n == 0 {
		n = l.Pool.Config().Pods
	}
	return l.Pool.SetReplicas(ctx, n)
}

// Slots implements gateway.Evented: the pool's pods (--pods) are its slots.
func (l *Local) Slots() int { return l.Pool.Config().Pods }

// Event implements gateway.Evented.
func (l *Local) Event(ctx context.Context, ev stacks.Event, pool stacks.Pool) error {
	pool = pool.WithDefaults()
	lc := emulator.Lifecycle{ReadyDelay: pool.ReadyDelay.D(), TerminationDrain: pool.TerminationDrain.D()}
	switch ev.Kind() {
	case "scale":
		return l.Pool.ScaleTo(ev.Scale, lc)
	case "restart":
		surge, unavailable, err := ev.Restart.Fenceposts(l.Pool.Replicas())
		if err != nil {
			return err
		}
		// A rollout goes on after the window that started it, as a Deployment's does; it
		// stops when the pool closes (Ctrl-C included), and the next scenario waits for it.
		return l.Pool.RollingRestart(context.WithoutCancel(ctx), surge, unavailable, lc)
	case "push":
		l.Pool.Push()
		return nil
	case "kill":
		return l.Pool.KillContainer(*ev.Kill, lc)
	}
	return fmt.Errorf("event %s: nothing to do", ev)
}

// Timeline implements gateway.Evented.
func (l *Local) Timeline(since time.Time) []gateway.Disruption {
	var out []gateway.Disruption
	for _, e := range l.Pool.Events() {
		if e.Planned && !e.Time.Before(since) {
			out = append(out, gateway.Disruption{Time: e.Time, Kind: e.Kind, Pod: e.Pod, Detail: e.Detail})
		}
	}
	return out
}

var _ gateway.Evented = (*Local)(nil)

// Size implements gateway.Sized: every gateway pod is replaced by one with the size, or with
// the flags' for a zero field.
func (l *Local) Size(ctx context.Context, s stacks.Size) error {
	return l.Pool.Resize(ctx, emulator.Size{Workers: s.Concurrency, CPULimit: int64(s.CPULimit), CPURequest: int64(s.CPURequest),
		ServiceTime: s.ServiceTime.D()})
}

// Check implements gateway.Checker: the emulated pool listens on loopback with a port per pod,
// and holds at most emulator.MaxPods pods and MaxWorkers workers a pod.
func (l *Local) Check(sc stacks.Scenario) error {
	if n := sc.Pool.Replicas; n > emulator.MaxPods {
		return fmt.Errorf("pool.replicas %d: allowed 0..%d on the local target; run it with --target sim", n, emulator.MaxPods)
	}
	if n := sc.Pool.Concurrency; n > emulator.MaxWorkers {
		return fmt.Errorf("pool.concurrency %d: allowed 0..%d on the local target; run it with --target sim", n, emulator.MaxWorkers)
	}
	for i, e := range sc.Events {
		if e.Scale > emulator.MaxPods {
			return fmt.Errorf("events[%d].scale %d: allowed 1..%d on the local target; run it with --target sim", i, e.Scale, emulator.MaxPods)
		}
	}
	return nil
}
