package model

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// ztunnel's outbound HBONE connection pool, as its source has it (src/proxy/pool.rs,
// WorkloadHBONEPool): one pool per ztunnel, keyed by who is calling whom, each pooled
// connection an HTTP/2 connection (mTLS) to one destination pod's port 15008 carrying one
// CONNECT stream per proxied TCP connection. Which pod a tunnel goes to is chosen before the
// pool is asked, per connection, at random among the service's endpoints
// (src/state.rs: find_upstream, "Randomly pick an upstream"); the pool then decides only
// which HTTP/2 connection to that pod carries it. So the pods' spread follows the client's
// connections, and the spread over each pod's Envoy workers follows the pool's connections.

// HBONEKey is the pool's key (WorkloadKey in src/proxy/pool.rs): the source workload's
// identity and address, and the destination's identity and address. Two client pods never
// share a connection; two connections of one pod to one waypoint pod do.
type HBONEKey struct {
	SrcID, SrcIP string
	DstID, Dst   string // Dst is the destination pod's HBONE address (ip:15008)
}

// HBONEPoolConfig is the pool's settings, with ztunnel's names (src/config.rs). ztunnel sets
// no connection lifetime: a pooled connection lives until it is unused for UnusedRelease, its
// peer goes away or a ping (every 10 s) goes unanswered for 20 s (src/proxy/h2.rs).
type HBONEPoolConfig struct {
	// MaxStreamsPerConn is pool_max_streams_per_conn (env POOL_MAX_STREAMS_PER_CONNECTION):
	// tunnels a connection carries at once before the pool opens another to the same key.
	MaxStreamsPerConn int
	// UnusedRelease is pool_unused_release_timeout (env POOL_UNUSED_RELEASE_TIMEOUT): a
	// connection that has carried no tunnel for this long is closed.
	UnusedRelease time.Duration
}

// DefaultHBONEPool is ztunnel's defaults (src/config.rs: DEFAULT_POOL_MAX_STREAMS_PER_CONNECTION,
// DEFAULT_POOL_UNUSED_RELEASE_TIMEOUT).
var DefaultHBONEPool = HBONEPoolConfig{MaxStreamsPerConn: 100, UnusedRelease: 5 * time.Minute}

// Check names a bad setting and its allowed range.
func (c HBONEPoolConfig) Check() error {
	if c.MaxStreamsPerConn < 1 || c.MaxStreamsPerConn > 65535 {
		return fmt.Errorf("pool_max_streams_per_conn %d: allowed 1..65535", c.MaxStreamsPerConn)
	}
	if c.UnusedRelease < time.Second || c.UnusedRelease > 24*time.Hour {
		return fmt.Errorf("pool_unused_release_timeout %s: allowed 1s..24h", c.UnusedRelease)
	}
	return nil
}

// HBONEConn is what the pool knows of one of its connections.
type HBONEConn struct {
	Streams  int       // tunnels open on it
	IdleFrom time.Time // when its last tunnel closed (zero while it has one)
	Closed   bool      // the peer went away, or it was released
	// Retired is a connection that reached the stream limit: the pool took it out and never
	// hands it out again, even once its streams end; it closes with its last stream
	// (maybe_checkin_conn: "removed from pool" when will_be_at_max_streamcount).
	Retired bool
}

// PickHBONE says which of a key's connections a new tunnel rides, or -1 to open a new one. The
// pool holds at most one connection per key that can take streams: a checkout takes it out and
// the check-in puts it back unless this stream brings it to the limit (src/proxy/pool.rs,
// checkout_conn_under_writelock and maybe_checkin_conn, under the key's lock). So tunnels fill
// one connection, then the next: no spreading over several.
func PickHBONE(c HBONEPoolConfig, conns []HBONEConn) int {
	for i, hc := range conns {
		if !hc.Closed && !hc.Retired && hc.Streams < c.MaxStreamsPerConn {
			return i
		}
	}
	return -1
}

// TakeHBONE counts a new tunnel on a connection, retiring it when the tunnel brings it to the
// stream limit (stream_count + 1 >= max_allowed_streams at check-in).
func TakeHBONE(c HBONEPoolConfig, hc *HBONEConn) {
	hc.Streams++
	hc.IdleFrom = time.Time{}
	if hc.Streams >= c.MaxStreamsPerConn {
		hc.Retired = true
	}
}

// ReleaseHBONE says whether a connection with no tunnel left closes: a retired one at once
// (nothing holds it), one in the pool once unused for the release timeout.
func ReleaseHBONE(c HBONEPoolConfig, hc HBONEConn, now time.Time) bool {
	if hc.Closed || hc.Streams > 0 || hc.IdleFrom.IsZero() {
		return false
	}
	return hc.Retired || now.Sub(hc.IdleFrom) >= c.UnusedRelease
}

// PickEndpoint is ztunnel's choice of a destination pod for a new connection to a service (a
// waypoint's too): uniformly at random among the ready endpoints (find_upstream), so each
// connection's pod is independent of the last's. It returns -1 with none ready.
func PickEndpoint(ready []bool, rng *rand.Rand) int {
	n := 0
	for _, r := range ready {
		if r {
			n++
		}
	}
	if n == 0 {
		return -1
	}
	k := rng.IntN(n)
	for i, r := range ready {
		if r {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

// ZtunnelCost is the work ztunnel does on its threads: it copies bytes between a pod's TCP
// connection and its tunnel, framing and encrypting them on the HBONE connection's task.
type ZtunnelCost struct {
	// PerChunk is the work per read relayed (a socket read, a DATA frame written, its record
	// encrypted); PerKiB per KiB of it; PerTunnel opening a CONNECT stream.
	PerChunk, PerKiB, PerTunnel time.Duration
	// Handshake is a new HBONE connection's mTLS handshake.
	Handshake time.Duration
}

// DefaultZtunnelCost keeps ztunnel's cost in the proportion Istio measures against a waypoint's:
// at 1,000 requests a second of 1 KB, a waypoint with 2 workers uses about 0.25 vCPU and a
// ztunnel about 0.06 (istio.io, "Performance and Scalability", Istio 1.24), so a request costs
// ztunnel about a quarter of what it costs Envoy. On the pool's scale (DefaultCost: 400 µs of
// Envoy work per small request) that is about 96 µs: a request read and its response relayed,
// 45 µs each plus 2 µs per KiB as Envoy's bytes are counted.
var DefaultZtunnelCost = ZtunnelCost{PerChunk: 45 * time.Microsecond, PerKiB: 2 * time.Microsecond,
	PerTunnel: 30 * time.Microsecond, Handshake: 300 * time.Microsecond}

// Scaled is c with every cost multiplied by num/den (a pool whose requests cost num where
// the default's cost den).
func (c ZtunnelCost) Scaled(num, den time.Duration) ZtunnelCost {
	if num <= 0 || den <= 0 || num == den {
		return c
	}
	f := func(d time.Duration) time.Duration { return time.Duration(float64(d) * float64(num) / float64(den)) }
	return ZtunnelCost{PerChunk: f(c.PerChunk), PerKiB: f(c.PerKiB), PerTunnel: f(c.PerTunnel), Handshake: f(c.Handshake)}
}

// Chunk is the work to relay n bytes read at once.
func (c ZtunnelCost) Chunk(n int) time.Duration {
	return c.PerChunk + time.Duration(n)*c.PerKiB/1024
}
