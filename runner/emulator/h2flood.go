package emulator

import (
	"sync"

	"golang.org/x/net/http2"
)

// protocolConstraints are Envoy's HTTP/2 flood limits (source/common/http/http2/
// protocol_constraints.cc, with the defaults of Http2::Utility::OptionsLimits in
// source/common/http/utility.h; the knobs move them). Every limit trips on one more than it
// allows, once per connection: the first violation latches, later checks answer with it and
// count nothing.
//   - outbound: frames written into the connection's buffer and not yet written to its socket
//     (max_outbound_frames, 10000), and of them PING and SETTINGS acknowledgements and
//     RST_STREAM (max_outbound_control_frames, 1000);
//   - inbound: HEADERS, CONTINUATION or DATA in a row with no payload and no END_STREAM
//     (max_consecutive_inbound_frames_with_empty_payload, 1); PRIORITY frames past
//     limit x (1 + streams opened) (max_inbound_priority_frames_per_stream, 100);
//     WINDOW_UPDATE frames past 5 + 2 x (streams opened + limit x DATA frames sent)
//     (max_inbound_window_update_frames_per_data_frame_sent, 10).
type protocolConstraints struct {
	maxOut, maxCtrl, maxEmpty, maxPriority, maxWU uint64

	mu        sync.Mutex
	out, ctrl uint64 // pending outbound frames
	dataSent  uint64
	tripped   bool

	// The dispatcher's own (no lock): inbound counts.
	emptyRun, priority, windowUpdates, opened uint64
}

func newProtocolConstraints(c *listenerConfig) protocolConstraints {
	return protocolConstraints{maxOut: uint64(c.MaxOutboundFrames), maxCtrl: uint64(c.MaxOutboundControlFrames),
		maxEmpty: uint64(c.MaxEmptyFrames), maxPriority: uint64(c.MaxPriorityPerStream), maxWU: uint64(c.MaxWindowUpdatePerData)}
}

// pending counts one frame written into the buffer.
func (c *protocolConstraints) pending(ctrl, data bool) {
	c.mu.Lock()
	c.out++
	if ctrl {
		c.ctrl++
	}
	if data {
		c.dataSent++
	}
	c.mu.Unlock()
}

// written releases frames the socket took.
func (c *protocolConstraints) written(frames, ctrl int) {
	c.mu.Lock()
	c.out -= uint64(frames)
	c.ctrl -= uint64(ctrl)
	c.mu.Unlock()
}

// checkOutbound is checkOutboundFrameLimits: false once a limit has tripped (counting the
// flood the first time).
func (c *protocolConstraints) checkOutbound(h *hcm) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tripped {
		return false
	}
	switch {
	case c.out > c.maxOut:
		h.OutboundFlood.Inc()
	case c.ctrl > c.maxCtrl:
		h.OutboundControlFlood.Inc()
	default:
		return true
	}
	c.tripped = true
	return false
}

// trackInbound is trackInboundFrames for one frame header (or a DATA frame's end): whether the
// connection is past a limit, and the flood counter to count when this frame is what tripped it.
func (c *protocolConstraints) trackInbound(h *hcm, typ http2.FrameType, endStream, empty bool) (bool, *Stat) {
	switch typ {
	case http2.FrameHeaders, http2.FrameContinuation, http2.FrameData:
		if empty && !endStream {
			c.emptyRun++
		} else {
			c.emptyRun = 0
		}
	case http2.FramePriority:
		c.priority++
	case http2.FrameWindowUpdate:
		c.windowUpdates++
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tripped {
		return true, nil
	}
	var st *Stat
	switch {
	case c.emptyRun > c.maxEmpty:
		st = h.InboundEmptyFlood
	case c.priority > c.maxPriority*(1+c.opened):
		st = h.InboundPriorityFlood
	case c.windowUpdates > 5+2*(c.opened+c.maxWU*c.dataSent):
		st = h.InboundWindowUpdateFlood
	default:
		return false, nil
	}
	c.tripped = true
	return true, st
}
