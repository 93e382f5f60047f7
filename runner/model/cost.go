package model

import "time"

// Cost sets the cost of work on a worker: what the socket emulator books for what crosses its
// connections, and what the simulator books for what its clients send.
type Cost struct {
	// ServiceTime is the work per request (header processing, routing, filters).
	ServiceTime time.Duration
	// PerKiB is the work per KiB of response body proxied.
	PerKiB time.Duration
	// ConnCost is the work to accept and set up a connection.
	ConnCost time.Duration
	// PerFrame is the work per message a stream carries after its first in each direction: a
	// request DATA frame after the request's first, an upstream read that arrives after a
	// pause. It is what a long-lived stream costs its worker.
	PerFrame time.Duration
}

// DefaultCost makes one worker serve about 2,500 small requests a second: well below what the
// harness itself can carry on two cores, so a saturated worker, not the machine, is what a
// concentrated scenario runs into.
//
// A message on a stream that is already open costs a tenth of a request: it skips what
// dominates a request's cost in Envoy (header parsing and validation, routing, the
// request-path filters' header callbacks) and keeps the per-frame codec and filter callbacks.
// Envoy publishes no such ratio; it is the model's estimate, and --per-frame changes it.
var DefaultCost = Cost{ServiceTime: 400 * time.Microsecond, PerKiB: 2 * time.Microsecond, ConnCost: 30 * time.Microsecond,
	PerFrame: 40 * time.Microsecond}

// Body is the work to proxy n bytes of a body.
func (c Cost) Body(n int64) time.Duration { return time.Duration(n) * c.PerKiB / 1024 }

// MessageGap is the pause after which data arriving on a stream is a message of its own rather
// than the rest of one already on its way: Envoy reads up to 128 KiB from an upstream socket at
// a time (raw_buffer_socket.cc), so a body that arrives back to back is forwarded in one read,
// and a streamed message that arrives later is another read, another encodeData through the
// filter chain.
const MessageGap = time.Millisecond

// ResponseRead is the worker's cost of one upstream read that reached the stream after the
// stream had waited waited for it: a streamed message (a gRPC server's next message, an event).
// The response's first read (reads 0) is the request's service time; reads of a body that is
// already on its way cost only their bytes (Body).
func (c Cost) ResponseRead(reads int, waited time.Duration) time.Duration {
	if reads == 0 || waited < MessageGap {
		return 0
	}
	return c.PerFrame
}

// RequestData is the worker's cost of a request DATA frame: Envoy's codec hands each frame to
// the connection manager (ConnectionImpl::onDataChunk -> decodeData), and every frame after the
// request's first is work a request's service time does not cover.
func (c Cost) RequestData(first bool) time.Duration {
	if first {
		return 0
	}
	return c.PerFrame
}

// Request is the worker's work to take a request up and run it through its filters: the
// service time, and on the gateway the JWT filter's verification where the listener has one
// (jwtVerify is what one verification costs).
func (c Cost) Request(l *Listener, gateway bool, jwtVerify time.Duration) time.Duration {
	d := c.ServiceTime
	if gateway && l.Filters.JWT != nil {
		d += jwtVerify
	}
	return d
}
