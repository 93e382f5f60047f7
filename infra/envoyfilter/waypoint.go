package envoyfilter

import (
	"github.com/igwlab/igwlab/stacks"
)

// The waypoint's filter. Istio builds a waypoint's listeners as inbound ones and patches them
// in the SIDECAR_INBOUND context (pilot/pkg/networking/core/listener.go, BuildListeners:
// buildWaypointListeners, then patchListeners), and a waypoint takes only filters that name it
// by targetRefs, not by workloadSelector (istio.io/api EnvoyFilter.targetRefs: a Gateway of
// the same namespace). Its listeners are Istio's own names (listener_waypoint.go):
// connect_terminate takes the HBONE connections on 15008, and main_internal, an internal
// listener on the same worker, runs the connection manager that serves the requests inside
// each tunnel. So the scenario's connection manager knobs go on main_internal's connection
// manager, and its listener knobs on connect_terminate, where the connections are placed.

// Names of the waypoint's listeners, as Istio builds them.
const (
	WaypointHBONEListener = "connect_terminate"
	WaypointInnerListener = "main_internal"
	WaypointName          = "igwlab-scenario-waypoint"
)

// WaypointTarget names the waypoint the filter is for.
type WaypointTarget struct {
	Namespace string // the waypoint's (and its Gateway's) namespace
	Gateway   string // the waypoint's Gateway (gatewayClassName istio-waypoint)
}

// DefaultWaypoint is the lab's waypoint for the backend namespace (infra.WaypointName).
var DefaultWaypoint = WaypointTarget{Namespace: "igw-test", Gateway: "igw-test-waypoint"}

// WaypointObject renders the waypoint's EnvoyFilter for an east-west scenario: its knobs on
// the waypoint. A scenario without knobs still gets one, with no patches.
func WaypointObject(name string, sc stacks.Scenario, t WaypointTarget) map[string]any {
	return object(name, t.Namespace, sc.Name, WaypointSpec(sc, t))
}

// WaypointSpec renders the waypoint's EnvoyFilter spec for a scenario.
func WaypointSpec(sc stacks.Scenario, t WaypointTarget) map[string]any {
	patches := []any{}
	if hcm := hcmValue(sc); len(hcm) > 0 {
		hcm["@type"] = HCMType
		patches = append(patches, map[string]any{
			"applyTo": "NETWORK_FILTER",
			"match": map[string]any{
				"context": "SIDECAR_INBOUND",
				"listener": map[string]any{
					"name":        WaypointInnerListener,
					"filterChain": map[string]any{"filter": map[string]any{"name": HCMFilter}},
				},
			},
			"patch": map[string]any{"operation": "MERGE", "value": map[string]any{"typed_config": hcm}},
		})
	}
	if l := sc.Knobs.Envoy("listener."); len(l) > 0 {
		patches = append(patches, map[string]any{
			"applyTo": "LISTENER",
			"match":   map[string]any{"context": "SIDECAR_INBOUND", "listener": map[string]any{"name": WaypointHBONEListener}},
			"patch":   map[string]any{"operation": "MERGE", "value": l},
		})
	}
	return map[string]any{
		"targetRefs":    []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": t.Gateway}},
		"configPatches": patches,
	}
}
