package simulated

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/runner/sim"
	"github.com/igwlab/igwlab/stacks"
)

// SetReplicas implements gateway.Evented.
func (t *Target) SetReplicas(ctx context.Context, n int) error {
	if n == 0 {
		n = t.Pool.Config().Pods
	}
	if err := t.Pool.SetReplicas(n, stopper(ctx)); err != nil {
		return err
	}
	return ctx.Err()
}

// Slots implements gateway.Evented: the simulated Deployment has room for sim.MaxPods pods.
func (t *Target) Slots() int { return sim.MaxPods }

// Event implements gateway.Evented: the step starts at the virtual time; the rest follow as
// the pool runs.
func (t *Target) Event(_ context.Context, ev stacks.Event, pool stacks.Pool) error {
	pool = pool.WithDefaults()
	lc := model.Lifecycle{ReadyDelay: pool.ReadyDelay.D(), TerminationDrain: pool.TerminationDrain.D()}
	switch ev.Kind() {
	case "scale":
		return t.Pool.ScaleTo(ev.Scale, lc)
	case "restart":
		surge, unavailable, err := ev.Restart.Fenceposts(t.Pool.Replicas())
		if err != nil {
			return err
		}
		return t.Pool.RollingRestart(surge, unavailable, lc)
	case "push":
		t.Pool.Push()
		return nil
	case "kill":
		return t.Pool.KillContainer(*ev.Kill, lc)
	}
	return fmt.Errorf("event %s: nothing to do", ev)
}

// Timeline implements gateway.Evented.
func (t *Target) Timeline(since time.Time) []gateway.Disruption {
	var out []gateway.Disruption
	for _, e := range t.Pool.Timeline {
		if e.Planned && !e.Time.Before(since) {
			out = append(out, gateway.Disruption{Time: e.Time, Kind: e.Kind, Pod: e.Pod, Detail: e.Detail})
		}
	}
	return out
}

// Size implements gateway.Sized.
func (t *Target) Size(ctx context.Context, s stacks.Size) error {
	if err := t.Pool.Resize(sim.Size{Workers: s.Concurrency, CPULimit: int64(s.CPULimit), CPURequest: int64(s.CPURequest),
		ServiceTime: s.ServiceTime.D()}, stopper(ctx)); err != nil {
		return err
	}
	return ctx.Err()
}

var (
	_ gateway.Evented = (*Target)(nil)
	_ gateway.Sized   = (*Target)(nil)
)
