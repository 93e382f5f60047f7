package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/stacks"
)

// A scenario's time passes on its target's clock: the wall clock, or a virtual target's (the
// simulator), whose pool stands still between calls. The steps are the same on both; only how
// time passes differs.

// virtual is the target's virtual clock, if it has one.
func (r *run) virtual() (gateway.Virtual, bool) {
	v, ok := r.o.Target.(gateway.Virtual)
	return v, ok
}

// now is the target's clock.
func (r *run) now() time.Time {
	if v, ok := r.virtual(); ok {
		return v.Now()
	}
	return time.Now()
}

// wait lets d pass on the target's clock.
func (r *run) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if v, ok := r.virtual(); ok {
		return v.Advance(ctx, d)
	}
	return sleep(ctx, d)
}

// window runs the scenario's client for its window, sampling the pods every interval and
// firing the scenario's events at their times: alongside the client on the wall clock, or as
// hooks on a virtual target's clock. It returns when the window began and how long it ran.
func (r *run) window(ctx context.Context, sc stacks.Scenario, spec load.Spec, smp *measure.Sampler, every time.Duration, dir string) (time.Time, time.Duration, *load.Result, error) {
	r.prog.step("load: %s for %s", clientText(sc.Client), sc.Load.Duration)
	if v, ok := r.virtual(); ok {
		smp.Clock = v.Now
		smp.Begin()
		start := v.Now()
		hooks := []gateway.Hook{{Every: every, F: func(time.Time) { smp.Sample(ctx) }}}
		if ev, ok := r.o.Target.(gateway.Evented); ok {
			for _, e := range sc.Events {
				hooks = append(hooks, gateway.Hook{At: e.At.D(), F: func(time.Time) { r.event(ctx, ev, e, sc.Pool) }})
			}
		}
		res, err := r.runLoad(ctx, spec, dir, hooks)
		return start, v.Now().Sub(start), res, err
	}
	sctx, stop := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { smp.Run(sctx, every); close(sampled) }()
	start := time.Now()
	fired := r.fireEvents(sctx, sc, start)
	res, err := r.runLoad(ctx, spec, dir, nil)
	window := time.Since(start)
	stop()
	<-sampled
	fired()
	return start, window, res, err
}

// event starts one of the scenario's events; one that fails becomes a warning.
func (r *run) event(ctx context.Context, ev gateway.Evented, e stacks.Event, pool stacks.Pool) {
	r.prog.step("event: %s", e)
	if err := ev.Event(ctx, e, pool); err != nil {
		r.warn(fmt.Sprintf("event %s failed: %v", e, err))
	}
}
