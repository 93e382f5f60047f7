package emulator

import "time"

// The pool's record of what happened to it: knob changes, faults, and the steps of a
// scenario's own events, which a run reads to say what disturbed it and to draw its timeline.

// Event is something that happened to the pool (a knob change, a pod killed or restarted).
type Event struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Pod    string    `json:"pod,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// Planned marks a scenario's own event (a scale, a rollout, a push), not a disruption.
	Planned bool `json:"planned,omitempty"`
}

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
