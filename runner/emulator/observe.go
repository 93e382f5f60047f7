package emulator

import (
	"sync/atomic"
	"time"
)

// capRecent is how recently a connection must have been at the stream cap for a new
// connection to count as dialled because of it.
const capRecent = 200 * time.Millisecond

// observer watches how clients behave at the gateway's limits, for igwlab serve's verdict on
// a client nobody instrumented: does it dial a new connection when its connections are at the
// stream cap, queue on them, and does it come back after a GOAWAY?
type observer struct {
	opened           atomic.Int64 // connections opened
	atCap            atomic.Int64 // connections currently at the stream cap
	lastCap          atomic.Int64 // when a connection last reached the cap (unix ns)
	capHits          atomic.Int64 // times a connection reached the cap
	openedWhileCap   atomic.Int64 // connections opened while another was at the cap
	drains           atomic.Int64 // drains started (GOAWAY notices sent)
	openedAfterDrain atomic.Int64 // connections opened after the first drain
	peakStreams      atomic.Int64 // most concurrent streams seen on one connection
}

// Observation is a snapshot of an observer.
type Observation struct {
	Opened           int64 `json:"connections_opened"`
	CapHits          int64 `json:"stream_cap_hits"`
	OpenedWhileAtCap int64 `json:"connections_opened_while_at_cap"`
	Drains           int64 `json:"drains_started"`
	OpenedAfterDrain int64 `json:"connections_opened_after_a_drain"`
	PeakStreams      int64 `json:"peak_streams_per_connection"`
}

func (o *observer) snapshot() Observation {
	return Observation{Opened: o.opened.Load(), CapHits: o.capHits.Load(), OpenedWhileAtCap: o.openedWhileCap.Load(),
		Drains: o.drains.Load(), OpenedAfterDrain: o.openedAfterDrain.Load(), PeakStreams: o.peakStreams.Load()}
}

func (o *observer) connOpened() {
	o.opened.Add(1)
	if last := o.lastCap.Load(); o.atCap.Load() > 0 || (last > 0 && time.Since(time.Unix(0, last)) < capRecent) {
		o.openedWhileCap.Add(1)
	}
	if o.drains.Load() > 0 {
		o.openedAfterDrain.Add(1)
	}
}

// streams records a connection's new stream count against its cap.
func (o *observer) streams(n, limit int64, wasAtCap bool) (atCap bool) {
	for {
		p := o.peakStreams.Load()
		if n <= p || o.peakStreams.CompareAndSwap(p, n) {
			break
		}
	}
	atCap = n >= limit
	if atCap {
		o.lastCap.Store(time.Now().UnixNano())
	}
	switch {
	case atCap && !wasAtCap:
		o.capHits.Add(1)
		o.atCap.Add(1)
	case !atCap && wasAtCap:
		o.atCap.Add(-1)
	}
	return atCap
}

// Observe returns what clients have done since the pool started (or since ResetObservation).
func (p *Pool) Observe() Observation { return p.obs.snapshot() }

// ResetObservation starts a new observation window.
func (p *Pool) ResetObservation() {
	o := &p.obs
	for _, c := range []*atomic.Int64{&o.lastCap, &o.opened, &o.capHits, &o.openedWhileCap, &o.drains, &o.openedAfterDrain, &o.peakStreams} {
		c.Store(0)
	}
}
