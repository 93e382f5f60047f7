package model

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// Listener is the configuration a connection is served with: the knobs in force when it was
// accepted. Like an Envoy listener update, applying new knobs does not change connections
// already open; it drains them. The socket emulator and the simulator read every knob here.
type Listener struct {
	Generation int
	// Knobs are every knob in force: the scenario's, else the value Istio's gateway runs with
	// (stacks.KnobSpec.InForce). The fields below are read from them through KnobFields.
	Knobs stacks.Knobs

	MaxConcurrentStreams uint32
	StreamWindow         uint32
	ConnWindow           uint32
	MaxRequestsPerConn   uint32 // 0: no limit
	MaxConnDuration      time.Duration
	MaxStreamDuration    time.Duration
	IdleTimeout          time.Duration
	StreamIdleTimeout    time.Duration
	DrainTimeout         time.Duration
	BufferLimit          uint32
	ExactBalance         bool
	ReusePort            bool

	MaxOutboundFrames, MaxOutboundControlFrames  uint32
	MaxEmptyFrames, MaxPriorityPerStream         uint32
	MaxWindowUpdatePerData                       uint32
	StreamErrorOnInvalid, OverrideStreamErrorSet bool
	OverrideStreamError                          bool

	Filters  stacks.Filters
	Waypoint bool
	Push     int // the EnvoyFilter's config push generation (Setup.Push)
}

// KnobFields binds every knob of the registry to the field the pools read it from; a knob
// without a binding fails TestEveryKnobIsModelled.
var KnobFields = map[string]func(*Listener) any{
	"hcm.http2_protocol_options.max_concurrent_streams":            func(c *Listener) any { return &c.MaxConcurrentStreams },
	"hcm.http2_protocol_options.initial_stream_window_size":        func(c *Listener) any { return &c.StreamWindow },
	"hcm.http2_protocol_options.initial_connection_window_size":    func(c *Listener) any { return &c.ConnWindow },
	"hcm.common_http_protocol_options.max_requests_per_connection": func(c *Listener) any { return &c.MaxRequestsPerConn },
	"hcm.common_http_protocol_options.max_connection_duration":     func(c *Listener) any { return &c.MaxConnDuration },
	"hcm.common_http_protocol_options.max_stream_duration":         func(c *Listener) any { return &c.MaxStreamDuration },
	"hcm.common_http_protocol_options.idle_timeout":                func(c *Listener) any { return &c.IdleTimeout },
	"hcm.stream_idle_timeout":                                      func(c *Listener) any { return &c.StreamIdleTimeout },
	"hcm.drain_timeout":                                            func(c *Listener) any { return &c.DrainTimeout },
	"listener.per_connection_buffer_limit_bytes":                   func(c *Listener) any { return &c.BufferLimit },
	"listener.connection_balance_config.exact_balance":             func(c *Listener) any { return &c.ExactBalance },
	"listener.enable_reuse_port":                                   func(c *Listener) any { return &c.ReusePort },
	"hcm.http2_protocol_options.max_outbound_frames":               func(c *Listener) any { return &c.MaxOutboundFrames },
	"hcm.http2_protocol_options.max_outbound_control_frames":       func(c *Listener) any { return &c.MaxOutboundControlFrames },
	"hcm.http2_protocol_options.max_consecutive_inbound_frames_with_empty_payload": func(c *Listener) any {
		return &c.MaxEmptyFrames
	},
	"hcm.http2_protocol_options.max_inbound_priority_frames_per_stream": func(c *Listener) any { return &c.MaxPriorityPerStream },
	"hcm.http2_protocol_options.max_inbound_window_update_frames_per_data_frame_sent": func(c *Listener) any {
		return &c.MaxWindowUpdatePerData
	},
	"hcm.stream_error_on_invalid_http_message": func(c *Listener) any { return &c.StreamErrorOnInvalid },
	"hcm.http2_protocol_options.override_stream_error_on_invalid_http_message": func(c *Listener) any {
		return &c.OverrideStreamError
	},
}

// Setup is what a gateway pool is told to run: a scenario's knobs, filters and waypoint toggle.
type Setup struct {
	Knobs    stacks.Knobs
	Filters  stacks.Filters
	Waypoint bool
	// Push is the config push generation an EnvoyFilter carries (envoyfilter.WithPush): the
	// listener's connection manager shows it in /config_dump, and a new one drains every
	// connection as a push does.
	Push int
}

// NewListener is the listener a pool of Envoy release envoy ("": stacks.DefaultEnvoy) serves s
// with, as generation: s's knobs, and for those it leaves unset, the release's defaults and
// then what Istio's gateway runs with.
func NewListener(s Setup, envoy string, generation int) *Listener {
	if envoy != "" && envoy != stacks.DefaultEnvoy {
		if rel, err := stacks.LookupEnvoy(envoy); err == nil {
			s.Knobs = s.Knobs.WithDefaults(rel)
		}
	}
	c := &Listener{Generation: generation, Knobs: s.Knobs.InForce(), Filters: s.Filters, Waypoint: s.Waypoint, Push: s.Push}
	for _, spec := range stacks.Registry {
		if bind := KnobFields[spec.Path]; bind != nil {
			_ = spec.Load(&c.Knobs, bind(c)) // the field's type is the knob's (TestEveryKnobIsModelled)
		}
	}
	if s, ok := stacks.Lookup("hcm.http2_protocol_options.override_stream_error_on_invalid_http_message"); ok {
		_, c.OverrideStreamErrorSet = s.Get(&c.Knobs)
	}
	return c
}

// StreamErrorOnInvalidMessage is whether an invalid request resets only its stream: the
// HTTP/2 override when set, else the connection manager's setting
// (Http2::Utility::initializeAndValidateOptions).
func (c *Listener) StreamErrorOnInvalidMessage() bool {
	if c.OverrideStreamErrorSet {
		return c.OverrideStreamError
	}
	return c.StreamErrorOnInvalid
}

// ListenerLevelDiffers says whether o changes the listener itself rather than only its filter
// chain: a change to a Listener field makes Envoy replace the listener instead of updating it
// in place.
func (c *Listener) ListenerLevelDiffers(o *Listener) bool {
	return !reflect.DeepEqual(c.Knobs.Envoy("listener."), o.Knobs.Envoy("listener."))
}

// HighWatermark and LowWatermark of a connection's write buffer: above high the gateway stops
// reading from upstreams, and resumes below low (Envoy resumes at half the limit).
func (c *Listener) HighWatermark() int64 {
	if c.BufferLimit == 0 {
		return 1<<63 - 1
	}
	return int64(c.BufferLimit)
}

// LowWatermark is where a paused connection resumes reading its upstreams.
func (c *Listener) LowWatermark() int64 { return c.HighWatermark() / 2 }

// StreamBufferLimit is Envoy's per-stream buffer limit: the HTTP/2 codec sets it to
// initial_stream_window_size and applies it to each stream's receive and send buffers.
func (c *Listener) StreamBufferLimit() int64 { return int64(c.StreamWindow) }

// SetupKey renders a setup canonically, to tell a real change (which drains every connection)
// from a re-apply of the same one.
func SetupKey(s Setup) string {
	b, _ := json.Marshal(struct {
		K any
		F stacks.Filters
		W bool
		P int
	}{s.Knobs.Set(), s.Filters, s.Waypoint, s.Push})
	return string(b)
}
