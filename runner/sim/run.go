package sim

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/igwlab/igwlab/runner/load"
)

// Hook is something the caller does on the virtual clock while a client runs: once at At from
// the window's start, or every Every from it (0: not repeating). The pool stands still while F
// runs, so what F reads (a pod's admin, the timeline) is the pool at that instant.
type Hook struct {
	At, Every time.Duration
	F         func(now time.Time)
}

// ErrStopped is a run stopped from outside (Ctrl-C) before its window ended.
var ErrStopped = fmt.Errorf("the simulation was stopped before the window ended")

// Load runs spec's client against the pool for spec.Duration of virtual time from now, with the
// hooks at their times, and returns the client's record. stop, when not nil, is asked as the
// simulation goes and ends it early (the record then covers what ran). After the window the
// client closes its connections, as the real ones do when they end, and the pool runs until
// the gateway has seen them close.
func (p *Pool) Load(spec load.Spec, hooks []Hook, stop func() bool) (*load.Result, error) {
	if err := CheckSpec(spec); err != nil {
		return nil, err
	}
	if spec.Duration <= 0 {
		return nil, fmt.Errorf("client duration %s: must be positive", spec.Duration)
	}
	// The simulation's live heap is small and churns fast (a record per stream): collecting at
	// 4x the live heap rather than 2x halves the collector's share of the run for a few MiB.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	start := p.Sim.Tick()
	r := &recorder{p: p, start: start, end: start + int64(spec.Duration)}
	c := p.newClient(spec, r)
	c.start()
	for _, h := range hooks {
		p.hook(h, start, r.end)
	}
	p.Sim.RunUntil(r.end, stop)
	stopped := stop != nil && stop()
	if stopped {
		r.end = p.Sim.Tick()
	}
	c.stop()
	// The closes reach the gateway half a round trip later.
	p.Sim.RunUntil(p.Sim.Tick()+p.oneWay()+int64(time.Millisecond), stop)
	res := r.result(spec.Kind)
	if stopped {
		return res, ErrStopped
	}
	return res, nil
}

// hook schedules h within the window [start, end].
func (p *Pool) hook(h Hook, start, end int64) {
	at := start + int64(h.At)
	if h.Every > 0 && h.At == 0 {
		at = start + int64(h.Every)
	}
	var run func()
	run = func() {
		if p.Sim.Tick() > end {
			return
		}
		h.F(p.Sim.Now())
		if h.Every > 0 {
			p.Sim.After(h.Every, run)
		}
	}
	p.Sim.At(at, run)
}

// Advance runs the pool for d of virtual time with no client of the caller's (a settle, a wait
// for quiet); what is still under way goes on.
func (p *Pool) Advance(d time.Duration, stop func() bool) {
	p.Sim.RunUntil(p.Sim.Tick()+int64(d), stop)
}
