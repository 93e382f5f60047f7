package emulator

import (
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// listenerConfig is the configuration a connection is served with: the knobs in force when it
// was accepted. Like an Envoy listener update, applying new knobs does not change connections
// already open; it drains them.
type listenerConfig struct {
	generation int

	maxConcurrentStreams uint32
	streamWindow         uint32
	connWindow           uint32
	maxRequestsPerConn   uint32 // 0: no limit
	maxConnDuration      time.Duration
	idleTimeout          time.Duration
	streamIdleTimeout    time.Duration
	drainTimeout         time.Duration
	bufferLimit          uint32
	exactBalance         bool
	reusePort            bool

	filters  stacks.Filters
	waypoint bool
}

// Envoy 1.35 defaults as Istio 1.27's gateway runs them: Istio sets stream_idle_timeout to 0
// (off) on every HTTP connection manager it builds; the rest are Envoy's own.
const (
	defaultMaxConcurrentStreams = 2147483647
	defaultWindow               = 268435456
	defaultIdleTimeout          = time.Hour
	defaultStreamIdleTimeout    = 0
	defaultDrainTimeout         = 5 * time.Second
	defaultBufferLimit          = 1 << 20
)

// Setup is what the gateway pool is told to run: a scenario's knobs, filters and waypoint toggle.
type Setup struct {
	Knobs    stacks.Knobs
	Filters  stacks.Filters
	Waypoint bool
}

func newListenerConfig(s Setup, generation int) *listenerConfig {
	c := &listenerConfig{
		generation:           generation,
		maxConcurrentStreams: defaultMaxConcurrentStreams,
		streamWindow:         defaultWindow,
		connWindow:           defaultWindow,
		idleTimeout:          defaultIdleTimeout,
		streamIdleTimeout:    defaultStreamIdleTimeout,
		drainTimeout:         defaultDrainTimeout,
		bufferLimit:          defaultBufferLimit,
		reusePort:            true,
		filters:              s.Filters,
		waypoint:             s.Waypoint,
	}
	k := s.Knobs
	if h := k.HCM.HTTP2; h != nil {
		setU32(&c.maxConcurrentStreams, h.MaxConcurrentStreams)
		setU32(&c.streamWindow, h.InitialStreamWindowSize)
		setU32(&c.connWindow, h.InitialConnectionWindowSize)
	}
	if cm := k.HCM.Common; cm != nil {
		setU32(&c.maxRequestsPerConn, cm.MaxRequestsPerConnection)
		setDur(&c.maxConnDuration, cm.MaxConnectionDuration)
		setDur(&c.idleTimeout, cm.IdleTimeout)
	}
	setDur(&c.streamIdleTimeout, k.HCM.StreamIdleTimeout)
	setDur(&c.drainTimeout, k.HCM.DrainTimeout)
	setU32(&c.bufferLimit, k.Listener.PerConnectionBufferLimitBytes)
	if cb := k.Listener.ConnectionBalanceConfig; cb != nil && cb.ExactBalance != nil {
		c.exactBalance = true
	}
	if k.Listener.EnableReusePort != nil {
		c.reusePort = *k.Listener.EnableReusePort
	}
	return c
}

func setU32(dst *uint32, v *uint32) {
	if v != nil {
		*dst = *v
	}
}

func setDur(dst *time.Duration, v *stacks.Duration) {
	if v != nil {
		*dst = v.D()
	}
}

// listenerLevelDiffers says whether o changes the listener itself rather than only its filter
// chain: those fields make Envoy replace the listener instead of updating it in place.
func (c *listenerConfig) listenerLevelDiffers(o *listenerConfig) bool {
	return c.bufferLimit != o.bufferLimit || c.exactBalance != o.exactBalance || c.reusePort != o.reusePort
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
