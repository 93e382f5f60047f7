package analysis

import (
	"fmt"
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
				ha, hb := "n/a", "n/a"
				if a.Ztunnel != nil && b.Ztunnel != nil {
					ha, hb = hboneText(*a.Ztunnel), hboneText(*b.Ztunnel)
				}
				// The same client connections give the same tunnels, placed by the same rule:
				// the spread is chance's for them again, however many HBONE connections carry them.
				v := Unexpected
				if b.ConnectionsTotal == a.ConnectionsTotal && b.ChanceVerdict == WithinChance {
					v = Confirmed
				}
				return v, ratioOf(b.ConnectionsTotal, a.ConnectionsTotal), "pooled tunnels / pinned tunnels",
					nums{"pinned_k": a.ConnectionsTotal, "pooled_k": b.ConnectionsTotal, "pinned_cv": a.CV, "pooled_cv": b.CV},
					fmt.Sprintf("tunnels %d and %d; HBONE connections %s vs %s; waypoint %s vs %s: the pod is picked per client connection, before the pool",
						int(a.ConnectionsTotal), int(b.ConnectionsTotal), hb, ha, cvText(b), cvText(a))
			}},
		check{id: "ZT threads", title: "more ztunnel threads carry what two could not", roles: []string{"two-threads", "four-threads"},
			eval: func(get lookup, _ int) (string, float64, string, nums, string) {
				a, b := get("two-threads"), get("four-threads")
				za, zb := ztunnelOf(a), ztunnelOf(b)
				// Two threads saturated, four not, doing more work than two can: the HBONE
				// connections' tasks spread over the threads there are (tokio steals queued
				// tasks for idle workers).
				v := Refuted
				if za.HotThreadBusy >= 0.95 && zb.HotThreadBusy < 0.9 && zb.CoresUsed() > float64(za.Threads) {
					v = Confirmed
				}
				return v, ratioOf(zb.HotThreadBusy, za.HotThreadBusy), "hottest thread, 4 / 2 threads", ztunnelNums(za, zb, a, b),
					fmt.Sprintf("%s vs %s; %.0f rps vs %.0f, p99 %.1f ms vs %.1f ms", threadsText(zb), threadsText(za), b.RPS, a.RPS, b.P99Ms, a.P99Ms)
			}},
	)
}

// ztunnelOf is a result's ztunnel tier (zero where the scenario had none).
func ztunnelOf(r *Result) ZtunnelTier {
	if r.Ztunnel == nil {
		return ZtunnelTier{}
	}
	return *r.Ztunnel
}

// ztunnelNums are the numbers of a comparison of two ztunnel set-ups.
func ztunnelNums(za, zb ZtunnelTier, a, b *Result) nums {
	return nums{"a_hot_thread": za.HotThreadBusy, "b_hot_thread": zb.HotThreadBusy, "a_threads": float64(za.Threads), "b_threads": float64(zb.Threads),
		"a_hbone": za.HBONEConnections, "b_hbone": zb.HBONEConnections, "a_cores": za.CoresUsed(), "b_cores": zb.CoresUsed(), "a_rps": a.RPS, "b_rps": b.RPS, "a_p99_ms": a.P99Ms, "b_p99_ms": b.P99Ms}
}

// threadsText describes a ztunnel tier's threads.
func threadsText(z ZtunnelTier) string {
	return fmt.Sprintf("%d threads (%.2f cores busy, hottest %.0f%%) on %d HBONE connection(s)", z.Threads, z.CoresUsed(), 100*z.HotThreadBusy, int(z.HBONEConnections))
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

// hboneText says how many HBONE connections the pool opened in the window and held at its
// end: a pool that reuses its connections opens none, one that gives each tunnel its own
// opens one a tunnel and closes it with the tunnel.
func hboneText(z ZtunnelTier) string {
	return fmt.Sprintf("%d opened in the window, %d open at its end", int(z.HBONEOpened), int(z.HBONEConnections))
}
