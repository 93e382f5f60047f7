package model

import "time"

// Event is something that happened to a pool, on its clock (the wall clock for the socket
// emulator, the virtual one for the simulator): a knob change, a pod killed or restarted, a
// step of a scenario's own event. A run reads the record to say what disturbed a window and to
// draw its timeline.
type Event struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Pod    string    `json:"pod,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// Planned marks a scenario's own event (a scale, a rollout, a push), not a disruption.
	Planned bool `json:"planned,omitempty"`
}
