package stacks

import (
	"fmt"
	"math"
	"time"
)

// Knobs are the gateway settings a scenario changes, laid out as they sit in Envoy's config:
// hcm is merged into the HttpConnectionManager filter, listener into the gateway Listener.
// A nil field means "not set": Envoy's default applies.
type Knobs struct {
	HCM      HCMKnobs      `yaml:"hcm"`
	Listener ListenerKnobs `yaml:"listener"`
}

// HCMKnobs are fields of envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.
type HCMKnobs struct {
	HTTP2                           *HTTP2Options              `yaml:"http2_protocol_options"`
	Common                          *CommonHTTPProtocolOptions `yaml:"common_http_protocol_options"`
	StreamIdleTimeout               *Duration                  `yaml:"stream_idle_timeout"`
	DrainTimeout                    *Duration                  `yaml:"drain_timeout"`
	StreamErrorOnInvalidHTTPMessage *bool                      `yaml:"stream_error_on_invalid_http_message"`
}

// HTTP2Options are fields of envoy.config.core.v3.Http2ProtocolOptions.
type HTTP2Options struct {
	MaxConcurrentStreams        *uint32 `yaml:"max_concurrent_streams"`
	InitialStreamWindowSize     *uint32 `yaml:"initial_stream_window_size"`
	InitialConnectionWindowSize *uint32 `yaml:"initial_connection_window_size"`
	// The flood and abuse limits (Envoy's ProtocolConstraints).
	MaxOutboundFrames                            *uint32 `yaml:"max_outbound_frames"`
	MaxOutboundControlFrames                     *uint32 `yaml:"max_outbound_control_frames"`
	MaxConsecutiveInboundFramesWithEmptyPayload  *uint32 `yaml:"max_consecutive_inbound_frames_with_empty_payload"`
	MaxInboundPriorityFramesPerStream            *uint32 `yaml:"max_inbound_priority_frames_per_stream"`
	MaxInboundWindowUpdateFramesPerDataFrameSent *uint32 `yaml:"max_inbound_window_update_frames_per_data_frame_sent"`
	OverrideStreamErrorOnInvalidHTTPMessage      *bool   `yaml:"override_stream_error_on_invalid_http_message"`
}

// CommonHTTPProtocolOptions are fields of envoy.config.core.v3.HttpProtocolOptions.
type CommonHTTPProtocolOptions struct {
	IdleTimeout              *Duration `yaml:"idle_timeout"`
	MaxConnectionDuration    *Duration `yaml:"max_connection_duration"`
	MaxRequestsPerConnection *uint32   `yaml:"max_requests_per_connection"`
	MaxStreamDuration        *Duration `yaml:"max_stream_duration"`
}

// ListenerKnobs are fields of envoy.config.listener.v3.Listener.
type ListenerKnobs struct {
	PerConnectionBufferLimitBytes *uint32                  `yaml:"per_connection_buffer_limit_bytes"`
	ConnectionBalanceConfig       *ConnectionBalanceConfig `yaml:"connection_balance_config"`
	EnableReusePort               *bool                    `yaml:"enable_reuse_port"`
}

// ConnectionBalanceConfig is envoy.config.listener.v3.Listener.ConnectionBalanceConfig.
type ConnectionBalanceConfig struct {
	ExactBalance *ExactBalance `yaml:"exact_balance"`
}

// ExactBalance is the empty message that turns on exact connection balancing.
type ExactBalance struct{}

// KnobType is how a knob's value is written and checked.
type KnobType int

// Knob types.
const (
	Uint32 KnobType = iota
	DurationKnob
	Bool
	Presence // an empty message: set ({}) or not
)

// KnobSpec documents one knob: where it lives, its type, Envoy's allowed range and default.
type KnobSpec struct {
	// Path is the knob's dotted path under knobs: ("hcm.http2_protocol_options.max_concurrent_streams").
	Path string
	// Type is the value's type.
	Type KnobType
	// Min and Max bound Uint32 values; MinD and MaxD bound durations.
	Min, Max   uint64
	MinD, MaxD time.Duration
	// Default is the value in force on an Istio 1.27 gateway (Envoy 1.35) when the knob is not
	// set, as text: Envoy's default, unless Istio sets its own. Defaults that change between
	// Envoy releases come from EnvoyReleases.
	Default string
	// InForce is that value written as the knob is ("" where Envoy leaves the field out and
	// the feature off). The emulator runs with it and its config_dump shows it.
	InForce string
	// Unit names the unit of the value.
	Unit string
	// Doc says what the knob does.
	Doc string
}

// maxProtoDuration is the largest duration the lab takes: ten years. google.protobuf.Duration
// allows more, which no gateway setting needs.
const maxProtoDuration = 10 * 365 * 24 * time.Hour

// Registry lists every knob the catalog accepts, with Envoy's names, ranges and defaults.
var Registry = []KnobSpec{
	{Path: "hcm.http2_protocol_options.max_concurrent_streams", Type: Uint32, Min: 1, Max: 2147483647,
		Default: envoyDefault("hcm.http2_protocol_options.max_concurrent_streams"), InForce: envoyDefault("hcm.http2_protocol_options.max_concurrent_streams"), Unit: "streams",
		Doc: "SETTINGS_MAX_CONCURRENT_STREAMS advertised to clients; a stream over it is refused (REFUSED_STREAM) until the client acknowledges the setting, and is a connection error (GOAWAY PROTOCOL_ERROR) after."},
	{Path: "hcm.http2_protocol_options.initial_stream_window_size", Type: Uint32, Min: 65535, Max: 2147483647,
		Default: envoyDefault("hcm.http2_protocol_options.initial_stream_window_size"), InForce: envoyDefault("hcm.http2_protocol_options.initial_stream_window_size"), Unit: "bytes",
		Doc: "per-stream HTTP/2 receive window, also the soft limit of bytes buffered per stream."},
	{Path: "hcm.http2_protocol_options.initial_connection_window_size", Type: Uint32, Min: 65535, Max: 2147483647,
		Default: envoyDefault("hcm.http2_protocol_options.initial_connection_window_size"), InForce: envoyDefault("hcm.http2_protocol_options.initial_connection_window_size"), Unit: "bytes",
		Doc: "per-connection HTTP/2 receive window."},
	{Path: "hcm.http2_protocol_options.max_outbound_frames", Type: Uint32, Min: 1, Max: math.MaxUint32,
		Default: "10000", InForce: "10000", Unit: "frames",
		Doc: "frames queued for a connection and not yet written to its socket; one more and the gateway closes the connection without flushing (http2.outbound_flood)."},
	{Path: "hcm.http2_protocol_options.max_outbound_control_frames", Type: Uint32, Min: 1, Max: math.MaxUint32,
		Default: "1000", InForce: "1000", Unit: "frames",
		Doc: "of those, PING and SETTINGS acknowledgements and RST_STREAMs; one more and the connection closes (http2.outbound_control_flood)."},
	{Path: "hcm.http2_protocol_options.max_consecutive_inbound_frames_with_empty_payload", Type: Uint32, Min: 0, Max: math.MaxUint32,
		Default: "1", InForce: "1", Unit: "frames",
		Doc: "HEADERS, CONTINUATION or DATA frames in a row with no payload and no END_STREAM; one more and the connection closes (http2.inbound_empty_frames_flood)."},
	{Path: "hcm.http2_protocol_options.max_inbound_priority_frames_per_stream", Type: Uint32, Min: 0, Max: math.MaxUint32,
		Default: "100", InForce: "100", Unit: "frames",
		Doc: "PRIORITY frames allowed per stream opened (and one stream's worth more); past it the connection closes (http2.inbound_priority_frames_flood)."},
	{Path: "hcm.http2_protocol_options.max_inbound_window_update_frames_per_data_frame_sent", Type: Uint32, Min: 1, Max: math.MaxUint32,
		Default: "10", InForce: "10", Unit: "frames",
		Doc: "WINDOW_UPDATE frames allowed per DATA frame sent (on top of 1 plus 2 per stream opened); past it the connection closes (http2.inbound_window_update_frames_flood)."},
	{Path: "hcm.http2_protocol_options.override_stream_error_on_invalid_http_message", Type: Bool,
		Default: "unset (hcm.stream_error_on_invalid_http_message decides)", Unit: "bool",
		Doc: "for HTTP/2 only, takes precedence over hcm.stream_error_on_invalid_http_message."},
	{Path: "hcm.stream_error_on_invalid_http_message", Type: Bool,
		Default: "false", InForce: "false", Unit: "bool",
		Doc: "false: a request with invalid headers ends the whole connection (http2.rx_messaging_error, downstream_cx_protocol_error); true: only its stream is reset."},
	{Path: "hcm.common_http_protocol_options.max_requests_per_connection", Type: Uint32, Min: 0, Max: math.MaxUint32,
		Default: "unlimited", Unit: "requests",
		Doc: "after this many requests the connection drains (GOAWAY); 0 or unset means no limit."},
	{Path: "hcm.common_http_protocol_options.max_connection_duration", Type: DurationKnob, MinD: 0, MaxD: maxProtoDuration,
		Default: "unlimited", Unit: "duration",
		Doc: "a connection older than this drains (GOAWAY) or closes if idle; 0s or unset means no limit."},
	{Path: "hcm.common_http_protocol_options.max_stream_duration", Type: DurationKnob, MinD: 0, MaxD: maxProtoDuration,
		Default: "unlimited", Unit: "duration",
		Doc: "a stream older than this ends, counted in downstream_rq_max_duration_reached: a 504 (408 before the request has ended; gRPC status 4) if no response has started, else RST_STREAM NO_ERROR; 0s or unset means no limit. Istio leaves the gateway routes' own max_stream_duration unset, so this one applies."},
	{Path: "hcm.common_http_protocol_options.idle_timeout", Type: DurationKnob, MinD: 0, MaxD: maxProtoDuration,
		Default: "3600s", InForce: "3600s", Unit: "duration",
		Doc: "a connection with no active stream for this long drains; 0s disables."},
	{Path: "hcm.stream_idle_timeout", Type: DurationKnob, MinD: 0, MaxD: maxProtoDuration,
		Default: "0s", InForce: "0s", Unit: "duration",
		Doc: "a stream with no activity for this long is reset; 0s disables (Istio sets 0s on every HTTP connection manager; Envoy's own default is 300s)."},
	{Path: "hcm.drain_timeout", Type: DurationKnob, MinD: 0, MaxD: maxProtoDuration,
		Default: "5s", InForce: "5s", Unit: "duration",
		Doc: "time between the GOAWAY shutdown notice and the final GOAWAY of a draining HTTP/2 connection."},
	{Path: "listener.per_connection_buffer_limit_bytes", Type: Uint32, Min: 0, Max: math.MaxUint32,
		Default: "1048576", InForce: "1048576", Unit: "bytes",
		Doc: "high watermark of a connection's buffers; above it the gateway stops reading the upstream."},
	{Path: "listener.connection_balance_config.exact_balance", Type: Presence,
		Default: "unset (kernel SO_REUSEPORT hashing)", Unit: "{}",
		Doc: "hand each accepted connection to the worker with the fewest active connections."},
	{Path: "listener.enable_reuse_port", Type: Bool,
		Default: "true", InForce: "true", Unit: "bool",
		Doc: "one listening socket per worker, so the kernel hashes connections to workers."},
}

// Lookup returns the spec of the knob at path.
func Lookup(path string) (KnobSpec, bool) {
	for _, s := range Registry {
		if s.Path == path {
			return s, true
		}
	}
	return KnobSpec{}, false
}

// KnobPaths lists every registered knob path, in registry order.
func KnobPaths() []string {
	out := make([]string, len(Registry))
	for i, s := range Registry {
		out[i] = s.Path
	}
	return out
}

// Range describes the allowed values of the knob.
func (s KnobSpec) Range() string {
	switch s.Type {
	case Uint32:
		return fmt.Sprintf("%d..%d", s.Min, s.Max)
	case DurationKnob:
		return fmt.Sprintf("%s..%s", Duration(s.MinD), Duration(s.MaxD))
	case Bool:
		return "true or false"
	default:
		return "{} (present) or absent"
	}
}
