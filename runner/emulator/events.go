package emulator

import (
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// The pool's record of what happened to it: knob changes, faults, and the steps of a
// scenario's own events, which a run reads to say what disturbed it and to draw its timeline.

// Event is something that happened to the pool (a knob change, a pod killed or restarted).
type Event = model.Event

func (p *Pool) event(kind, pod, detail string) {
	p.mu.Lock()
	p.events = append(p.events, Event{Time: time.Now(), Kind: kind, Pod: pod, Detail: detail})
	p.mu.Unlock()
}

// planned records a step of a scenario's own event.
func (p *Pool) planned(kind, pod, detail string) {
	p.mu.Lock()
	p.events = append(p.events, Event{Time: time.Now(), Kind: kind, Pod: pod, Detail: detail, Planned: true})
	p.mu.Unlock()
}

// Events returns what happened since start.
func (p *Pool) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}
