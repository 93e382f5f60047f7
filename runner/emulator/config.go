package emulator

import (
	"reflect"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// listenerConfig is the configuration a connection is served with: the knobs in force when it
// was accepted. Like an Envoy listener update, applying new knobs does not change connections
// already open; it drains them.
type listenerConfig struct {
	generation int
	// knobs are every knob in force: the scenario's, else the value Istio's gateway runs with
	// (stacks.KnobSpec.InForce). The fields below are read from them through knobFields.
	knobs stacks.Knobs

	maxConcurrentStreams uint32
	streamWindow         uint32
	connWindow           uint32
	maxRequestsPerConn   uint32 // 0: no limit
	maxConnDuration      time.Duration
	maxStreamDuration    time.Duration
	idleTimeout          time.Duration
	streamIdleTimeout    time.Duration
	drainTimeout         time.Duration
	bufferLimit          uint32
	exactBalance         bool
	reusePort            bool

	maxOutboundFrames, maxOutboundControlFrames  uint32
	maxEmptyFrames, maxPriorityPerStream         uint32
	maxWindowUpdatePerData                       uint32
	streamErrorOnInvalid, overrideStreamErrorSet bool
	overrideStreamError                          bool

	filters  stacks.Filters
	waypoint bool
	push     int // the EnvoyFilter's config push generation (Setup.Push)
}

// knobFields binds every knob of the registry to the field the emulator reads it from; a knob
// without a binding fails TestEveryKnobIsEmulated.
var knobFields = map[string]func(*listenerConfig) any{
	"hcm.http2_protocol_options.max_concurrent_streams":            func(c *listenerConfig) any { return &c.maxConcurrentStreams },
	"hcm.http2_protocol_options.initial_stream_window_size":        func(c *listenerConfig) any { return &c.streamWindow },
	"hcm.http2_protocol_options.initial_connection_window_size":    func(c *listenerConfig) any { return &c.connWindow },
	"hcm.common_http_protocol_options.max_requests_per_connection": func(c *listenerConfig) any { return &c.maxRequestsPerConn },
	"hcm.common_http_protocol_options.max_connection_duration":     func(c *listenerConfig) any { return &c.maxConnDuration },
	"hcm.common_http_protocol_options.max_stream_duration":         func(c *listenerConfig) any { return &c.maxStreamDuration },
	"hcm.common_http_protocol_options.idle_timeout":                func(c *listenerConfig) any { return &c.idleTimeout },
	"hcm.stream_idle_timeout":                                      func(c *listenerConfig) any { return &c.streamIdleTimeout },
	"hcm.drain_timeout":                                            func(c *listenerConfig) any { return &c.drainTimeout },
	"listener.per_connection_buffer_limit_bytes":                   func(c *listenerConfig) any { return &c.bufferLimit },
	"listener.connection_balance_config.exact_balance":             func(c *listenerConfig) any { return &c.exactBalance },
	"listener.enable_reuse_port":                                   func(c *listenerConfig) any { return &c.reusePort },
	"hcm.http2_protocol_options.max_outbound_frames":               func(c *listenerConfig) any { return &c.maxOutboundFrames },
	"hcm.http2_protocol_options.max_outbound_control_frames":       func(c *listenerConfig) any { return &c.maxOutboundControlFrames },
	"hcm.http2_protocol_options.max_consecutive_inbound_frames_with_empty_payload": func(c *listenerConfig) any {
		return &c.maxEmptyFrames
	},
	"hcm.http2_protocol_options.max_inbound_priority_frames_per_stream": func(c *listenerConfig) any { return &c.maxPriorityPerStream },
	"hcm.http2_protocol_options.max_inbound_window_update_frames_per_data_frame_sent": func(c *listenerConfig) any {
		return &c.maxWindowUpdatePerData
	},
	"hcm.stream_error_on_invalid_http_message": func(c *listenerConfig) any { return &c.streamErrorOnInvalid },
	"hcm.http2_protocol_options.override_stream_error_on_invalid_http_message": func(c *listenerConfig) any {
		return &c.overrideStreamError
	},
}

// Setup is what the gateway pool is told to run: a scenario's knobs, filters and waypoint toggle.
type Setup struct {
	Knobs    stacks.Knobs
	Filters  stacks.Filters
	Waypoint bool
	// Push is the config push generation an EnvoyFilter carries (envoyfilter.WithPush): the
	// listener's connection manager shows it in /config_dump, and a new one drains every
	// connection as a push does.
	Push int
}

func newListenerConfig(s Setup, generation int) *listenerConfig {
	c := &listenerConfig{generation: generation, knobs: s.Knobs.InForce(), filters: s.Filters, waypoint: s.Waypoint, push: s.Push}
	for _, spec := range stacks.Registry {
		if bind := knobFields[spec.Path]; bind != nil {
			_ = spec.Load(&c.knobs, bind(c)) // the field's type is the knob's (TestEveryKnobIsEmulated)
		}
	}
	if s, ok := stacks.Lookup("hcm.http2_protocol_options.override_stream_error_on_invalid_http_message"); ok {
		_, c.overrideStreamErrorSet = s.Get(&c.knobs)
	}
	return c
}

// streamErrorOnInvalidMessage is whether an invalid request resets only its stream: the
// HTTP/2 override when set, else the connection manager's setting
// (Http2::Utility::initializeAndValidateOptions).
func (c *listenerConfig) streamErrorOnInvalidMessage() bool {
	if c.overrideStreamErrorSet {
		return c.overrideStreamError
	}
	return c.streamErrorOnInvalid
}

// maxRequestHeadersBytes is max_request_headers_kb, which Envoy also hands oghttp2 as its
// max_header_list_bytes (codec_impl.cc Http2Options).
func (c *listenerConfig) maxRequestHeadersBytes() uint32 { return maxRequestHeadersKB * 1024 }

// listenerConfig is the configuration the pool's pods serve s with: its knobs, and for those it
// leaves unset, the defaults of the pool's Envoy release.
func (p *Pool) listenerConfig(s Setup, generation int) *listenerConfig {
	if p.cfg.Envoy != stacks.DefaultEnvoy {
		rel, _ := stacks.LookupEnvoy(p.cfg.Envoy) // checked by Config.Check
		s.Knobs = s.Knobs.WithDefaults(rel)
	}
	return newListenerConfig(s, generation)
}

// listenerLevelDiffers says whether o changes the listener itself rather than only its filter
// chain: a change to a Listener field makes Envoy replace the listener instead of updating it
// in place.
func (c *listenerConfig) listenerLevelDiffers(o *listenerConfig) bool {
	return !reflect.DeepEqual(c.knobs.Envoy("listener."), o.knobs.Envoy("listener."))
}

// highWatermark and lowWatermark of a connection's write buffer: above high the gateway stops
// reading from upstreams, and resumes below low (Envoy resumes at half the limit).
func (c *listenerConfig) highWatermark() int64 {
	if c.bufferLimit == 0 {
		return 1<<63 - 1
	}
	return int64(c.bufferLimit)
}

func (c *listenerConfig) lowWatermark() int64 { return c.highWatermark() / 2 }

// streamBufferLimit is Envoy's per-stream buffer limit: the HTTP/2 codec sets it to
// initial_stream_window_size and applies it to each stream's receive and send buffers.
func (c *listenerConfig) streamBufferLimit() int64 { return int64(c.streamWindow) }
