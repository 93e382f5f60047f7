package analysis

import (
	"fmt"
	"math"
)

// The east-west calls: mesh clients through a waypoint, their connections carried by ztunnel
// in HBONE tunnels (stacks/22-ew-*.yaml). ztunnel picks the waypoint pod per client connection
// (istio/ztunnel src/state.rs, find_upstream: a random endpoint) and only then asks its pool
// for an HBONE connection to that pod, so the pods' spread follows the client's connections
// (the tunnels the waypoints' connection manager counts) and the pool decides only how those
// tunnels share HTTP/2 connections, that is, workers inside a pod.
func init() {
	checks = append(checks,
		check{id: "EW", title: "waypoint pods follow the client connections ztunnel tunnels", roles: []string{"pinned"},
			eval: func(get lookup, _ int) (string, float64, string, nums, string) {
				s := get("pinned")
				k := s.ConnectionsTotal
				v := Investigate
				// The tunnels are the client's connections, one each, and their spread is
				// what chance gives that many.
				if int(k) == s.ClientConnections && s.ChanceVerdict == WithinChance {
					v = Confirmed
				}
				n := nums{"tunnels": k, "client_connections": float64(s.ClientConnections), "cv": s.CV, "cv_requests": s.CVRequests,
					"idle_pods": float64(idlePods(s))}
				hb := "HBONE connections not measured"
				if z := s.Ztunnel; z != nil {
					n["hbone_connections"] = z.HBONEConnections
					hb = fmt.Sprintf("%d HBONE connection(s) open", int(z.HBONEConnections))
				}
				return v, ratioOf(k, float64(s.ClientConnections)), "tunnels / client connections", n,
					fmt.Sprintf("%d client connection(s) became %d tunnel(s) (%s); waypoint %s; %d of %d waypoint pods served nothing; hottest waypoint worker busy %s",
						s.ClientConnections, int(k), hb, cvText(s), idlePods(s), len(s.Connections), s.Tier.BusyText())
			}},
		check{id: "EW rotation", title: "rotation on the waypoint moves the spread: a new connection, a new pod", roles: []string{"pinned", "rotated"},
			eval: func(get lookup, _ int) (string, float64, string, nums, string) {
				a, b := get("pinned"), get("rotated")
				// Many more tunnels, each placed afresh: the spread falls to what chance gives
				// them. One run in forty lands in chance's own 2.5% tail, so only a spread
				// far beyond it (p < 0.001) says the lever did not work.
				v := Refuted
				if b.ConnectionsTotal > 4*a.ConnectionsTotal && b.CV < a.CV/2 && !(b.ChanceVerdict == MoreConcentrated && b.ChanceP < 0.001) {
					v = Confirmed
				}
				return v, ratioOf(b.CV, a.CV), "rotated CV / pinned CV",
					nums{"pinned_cv": a.CV, "rotated_cv": b.CV, "pinned_k": a.ConnectionsTotal, "rotated_k": b.ConnectionsTotal, "max_requests_reached": b.MaxRequestsReached},
					fmt.Sprintf("tunnels %d -> %d; waypoint %s vs %s; %d of %d pods idle vs %d",
						int(a.ConnectionsTotal), int(b.ConnectionsTotal), cvText(b), cvText(a), idlePods(b), len(b.Connections), idlePods(a))
			}},
		check{id: "EW pool", title: "ztunnel's pool limit does not move the pods' spread", roles: []string{"pinned", "pooled"},
			eval: func(get lookup, _ int) (string, float64, string, nums, string) {
				a, b := get("pinned"), get("pooled")
				ha, hb := math.NaN(), math.NaN()
				if a.Ztunnel != nil && b.Ztunnel != nil {
					ha, hb = a.Ztunnel.HBONEConnections, b.Ztunnel.HBONEConnections
				}
				// The same client connections give the same tunnels, placed by the same rule:
				// the spread is chance's for them again, however many HBONE connections carry them.
				v := Unexpected
				if b.ConnectionsTotal == a.ConnectionsTotal && b.ChanceVerdict == WithinChance {
					v = Confirmed
				}
				return v, ratioOf(b.ConnectionsTotal, a.ConnectionsTotal), "pooled tunnels / pinned tunnels",
					nums{"pinned_k": a.ConnectionsTotal, "pooled_k": b.ConnectionsTotal, "pinned_cv": a.CV, "pooled_cv": b.CV,
						"pinned_hbone": ha, "pooled_hbone": hb},
					fmt.Sprintf("tunnels %d and %d; HBONE connections open %s and %s; waypoint %s vs %s: the pod is picked per client connection, before the pool",
						int(a.ConnectionsTotal), int(b.ConnectionsTotal), numText(ha), numText(hb), cvText(b), cvText(a))
			}},
	)
}

// idlePods counts the pods of a result's tier that took no connection.
func idlePods(r *Result) int {
	n := 0
	for _, c := range r.Connections {
		if c == 0 {
			n++
		}
	}
	return n
}

// numText prints a count, or "n/a" for one not measured.
func numText(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprint(int(x))
}
