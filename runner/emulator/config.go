package emulator

import "github.com/igwlab/igwlab/runner/model"

// listenerConfig is the configuration a connection is served with: the knobs in force when it
// was accepted (the pool's model, runner/model/listener.go).
type listenerConfig = model.Listener

// Setup is what the gateway pool is told to run: a scenario's knobs, filters and waypoint toggle.
type Setup = model.Setup

// knobFields binds every knob to the field the pools read it from.
var knobFields = model.KnobFields

// maxRequestHeadersBytes is max_request_headers_kb, which Envoy also hands oghttp2 as its
// max_header_list_bytes (codec_impl.cc Http2Options).
func maxRequestHeadersBytes() uint32 { return maxRequestHeadersKB * 1024 }

// listenerConfig is the configuration the pool's pods serve s with: its knobs, and for those it
// leaves unset, the defaults of the pool's Envoy release.
func (p *Pool) listenerConfig(s Setup, generation int) *listenerConfig {
	return model.NewListener(s, p.cfg.Envoy, generation)
}
