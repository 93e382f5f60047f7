package stacks

import (
	"fmt"
	"time"
)

// EastWest makes a scenario ambient east-west traffic instead of ingress: mesh client pods on
// the cluster's nodes call httpbin through its waypoint, each pod's connections captured by its
// node's ztunnel and carried to a waypoint pod in HBONE tunnels. No gateway is involved: the
// scenario's knobs are the waypoint's (an EnvoyFilter on the waypoint), the measured tier is
// the waypoint's pods, and ztunnel's settings are its own.
type EastWest struct {
	// Clients is how many client pods run the scenario's client, each on node i mod nodes,
	// each a separate workload identity and address (so ztunnel's pool never shares a
	// connection between them).
	Clients int `yaml:"clients"`
	// Via is what carries the service's traffic: its waypoint (ViaWaypoint, the default), or
	// ztunnel alone (ViaZtunnel: the service has no waypoint, the destination node's ztunnel
	// takes the tunnel to the pod: ambient's L4).
	Via string `yaml:"via"`
	// Ztunnel is the node proxies' settings (Istio's ztunnel chart: env of the DaemonSet).
	Ztunnel Ztunnel `yaml:"ztunnel"`
}

// What carries an east-west scenario's traffic.
const (
	ViaWaypoint = "waypoint"
	ViaZtunnel  = "ztunnel"
)

// Ztunnel is ztunnel's settings, with its own names (src/config.rs); zero keeps its default.
type Ztunnel struct {
	// Workers is ZTUNNEL_WORKER_THREADS: the data-plane runtime's threads (src/app.rs,
	// new_data_plane_pool). 2 by default through ztunnel 1.30 (the lab's Istio 1.27 runs 2);
	// from 1.31 (istio/ztunnel#1993) the default follows the CPU limit the chart passes, else
	// max(a quarter of the node's cores, the CPU request, 2).
	Workers int `yaml:"workers"`
	// PoolMaxStreamsPerConn is POOL_MAX_STREAMS_PER_CONNECTION: tunnels one HBONE connection
	// carries before the pool opens another to the same destination pod (100).
	PoolMaxStreamsPerConn int `yaml:"pool_max_streams_per_conn"`
	// PoolUnusedReleaseTimeout is POOL_UNUSED_RELEASE_TIMEOUT: how long an HBONE connection
	// with no tunnel stays pooled (5m).
	PoolUnusedReleaseTimeout Duration `yaml:"pool_unused_release_timeout"`
}

// ZtunnelDefaults are ztunnel's defaults as the lab's Istio 1.27 runs it.
var ZtunnelDefaults = Ztunnel{Workers: 2, PoolMaxStreamsPerConn: 100, PoolUnusedReleaseTimeout: Duration(5 * time.Minute)}

// WithDefaults fills the unset settings with ztunnel's defaults.
func (z Ztunnel) WithDefaults() Ztunnel {
	if z.Workers == 0 {
		z.Workers = ZtunnelDefaults.Workers
	}
	if z.PoolMaxStreamsPerConn == 0 {
		z.PoolMaxStreamsPerConn = ZtunnelDefaults.PoolMaxStreamsPerConn
	}
	if z.PoolUnusedReleaseTimeout == 0 {
		z.PoolUnusedReleaseTimeout = ZtunnelDefaults.PoolUnusedReleaseTimeout
	}
	return z
}

// Env is the settings as the ztunnel container's environment, the names its config reads
// (src/config.rs): only those the scenario sets.
func (z Ztunnel) Env() map[string]string {
	env := map[string]string{}
	if z.Workers != 0 {
		env["ZTUNNEL_WORKER_THREADS"] = fmt.Sprint(z.Workers)
	}
	if z.PoolMaxStreamsPerConn != 0 {
		env["POOL_MAX_STREAMS_PER_CONNECTION"] = fmt.Sprint(z.PoolMaxStreamsPerConn)
	}
	if z.PoolUnusedReleaseTimeout != 0 {
		env["POOL_UNUSED_RELEASE_TIMEOUT"] = z.PoolUnusedReleaseTimeout.D().String()
	}
	return env
}

// eastWestClients are the clients an east-west scenario can run in its client pods: h2dial's
// results add up exactly across pods (their histograms merge).
var eastWestClients = []string{"h2dial"}

func checkEastWest(s *Scenario, bad func(field, msg string), intRange func(field string, v int), oneOf func(field, v string, allowed []string)) {
	ew := s.EastWest
	if ew == nil {
		return
	}
	intRange("east_west.clients", ew.Clients)
	if ew.Ztunnel.Workers != 0 {
		intRange("east_west.ztunnel.workers", ew.Ztunnel.Workers)
	}
	if ew.Ztunnel.PoolMaxStreamsPerConn != 0 {
		intRange("east_west.ztunnel.pool_max_streams_per_conn", ew.Ztunnel.PoolMaxStreamsPerConn)
	}
	if d := ew.Ztunnel.PoolUnusedReleaseTimeout.D(); d != 0 && (d < time.Second || d > 24*time.Hour) {
		bad("east_west.ztunnel.pool_unused_release_timeout", fmt.Sprintf("%s is out of range (allowed 1s..24h)", ew.Ztunnel.PoolUnusedReleaseTimeout))
	}
	oneOf("client.kind", s.Client.Kind, eastWestClients)
	oneOf("east_west.via", ew.Via, []string{"", ViaWaypoint, ViaZtunnel})
	if s.Waypoint {
		bad("waypoint", "an east_west scenario goes through the waypoint already; waypoint: true is for ingress through it")
	}
	if len(s.Events) > 0 || len(s.Local.Events) > 0 {
		bad("events", "events change the gateway's pods; an east_west scenario has none")
	}
}
