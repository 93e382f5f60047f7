package analysis

import (
	"fmt"
	"math"
)

type nums = map[string]float64

// checks are the lab's calls, in the order the evaluation block prints them. Each states its
// rule in terms that do not hinge on where a handful of connections happened to land.
var checks = []check{
	{id: "H-A", title: "the mechanism: few connections concentrate load", roles: []string{"baseline", "trigger"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s1, s2 := get("baseline"), get("trigger")
			ratio := ratioOf(s2.CV, s1.CV)
			v := Investigate
			if s2.CV > 2*s1.CV {
				v = Pass
			}
			n := nums{"s1_cv": s1.CV, "s2_cv": s2.CV, "s1_k": s1.ConnectionsTotal, "s2_k": s2.ConnectionsTotal,
				"s1_p99_ms": s1.P99Ms, "s2_p99_ms": s2.P99Ms}
			if s1.BusyMeasured && s2.BusyMeasured {
				n["s1_busy_max"], n["s2_busy_max"] = s1.BusyMax, s2.BusyMax
			}
			return v, ratio, "s2 CV / s1 CV", n,
				fmt.Sprintf("s2 %s vs s1 %s: %.1fx; %s; p99 %.1f ms vs %.1f ms",
					cvText(s2), cvText(s1), ratio, busyVs(s2.Tier, s1.Tier), s2.P99Ms, s1.P99Ms)
		}},
	{id: "H-B fortio", title: "a stream cap does nothing for a queueing client", roles: []string{"control", "capped"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			a, b := get("control"), get("capped")
			ratio := ratioOf(b.CV, a.CV)
			v := Confirmed
			if b.ConnectionsTotal > a.ConnectionsTotal {
				v = Unexpected
			}
			return v, ratio, "s3f CV / s2f CV", nums{"s2f_cv": a.CV, "s3f_cv": b.CV, "s2f_k": a.ConnectionsTotal, "s3f_k": b.ConnectionsTotal},
				fmt.Sprintf("connections %d -> %d with the cap (fortio dialed nothing); s3f %s; s2f %s",
					int(a.ConnectionsTotal), int(b.ConnectionsTotal), cvText(b), cvText(a))
		}},
	{id: "H-B h2dial", title: "a stream cap makes a dialing client spread", roles: []string{"control", "capped"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s2, s3 := get("control"), get("capped")
			ratio := ratioOf(s3.CV, s2.CV)
			v := Investigate
			switch {
			case s3.CV < 0.7*s2.CV:
				v = Pass
			case s3.ConnectionsTotal > s2.ConnectionsTotal:
				v = Partial // it dialed; the new connections just landed together this time
			}
			return v, ratio, "s3 CV / s2 CV", nums{"s2_cv": s2.CV, "s3_cv": s3.CV, "s2_k": s2.ConnectionsTotal, "s3_k": s3.ConnectionsTotal,
					"s2_p99_ms": s2.P99Ms, "s3_p99_ms": s3.P99Ms},
				fmt.Sprintf("connections %d -> %d under the cap; s3 %s vs s2 %s; p99 %.1f ms vs %.1f ms",
					int(s2.ConnectionsTotal), int(s3.ConnectionsTotal), cvText(s3), cvText(s2), s3.P99Ms, s2.P99Ms)
		}},
	{id: "H-C h2dial", title: "count rotation spreads a dialing client", roles: []string{"control", "rotated"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s2, s4 := get("control"), get("rotated")
			ratio := ratioOf(s4.CV, s2.CV)
			v := Investigate
			if rotated(s4, s2, s4.MaxRequestsReached) && s4.CV < s2.CV {
				v = Pass
			}
			return v, ratio, "s4 CV / s2 CV", nums{"s4_goaways": s4.GoAways, "s4_max_requests_reached": s4.MaxRequestsReached,
					"s2_k": s2.ConnectionsTotal, "s4_k": s4.ConnectionsTotal, "s2_cv": s2.CV, "s4_cv": s4.CV, "s4_p99_ms": s4.P99Ms},
				fmt.Sprintf("%s; s4 %s vs s2 %s", rotationText(s4, s2, s4.MaxRequestsReached, "downstream_cx_max_requests_reached", "requests at or over the limit"),
					cvText(s4), cvText(s2))
		}},
	{id: "H-C fortio", title: "count rotation spreads a queueing client", roles: []string{"control", "rotated"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			a, b := get("control"), get("rotated")
			ratio := ratioOf(b.CV, a.CV)
			v := Investigate
			switch {
			case rotated(b, a, b.MaxRequestsReached) && b.CV <= 0.5*a.CV:
				v = Confirmed
			case rotated(b, a, b.MaxRequestsReached):
				v = Partial
			}
			return v, ratio, "s4f CV / s2f CV", nums{"s4f_goaways": b.GoAways, "s4f_max_requests_reached": b.MaxRequestsReached,
					"s2f_k": a.ConnectionsTotal, "s2f_cv": a.CV, "s4f_cv": b.CV, "s4f_k": b.ConnectionsTotal},
				fmt.Sprintf("%s; s4f %s vs s2f %s: %.0f%% lower",
					rotationText(b, a, b.MaxRequestsReached, "downstream_cx_max_requests_reached", "requests at or over the limit"),
					cvText(b), cvText(a), 100*(1-ratio))
		}},
	{id: "H-D", title: "flow-control windows as a hidden bottleneck", roles: []string{"control", "windows"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s2, s5 := get("control"), get("windows")
			a, b := s2.FlowControlPaused, s5.FlowControlPaused
			ratio := ratioOf(b, a)
			// Pauses come and go with how fast the client drains its socket: on two shared
			// cores 02-trigger paused its upstream on up to 3.3% of its requests (590 of
			// 17,861, igwlab suite --target local --repeat 5, 05-windows 0 in the same runs),
			// where no window could have set it. A bottleneck pauses on about half the
			// requests (08-buffers-control, whose per-connection buffer is one, paused on 40
			// to 77% of its requests in those runs and the next five), so the call takes one
			// pause per ten requests as the floor.
			floor := math.Max(10, float64(s2.Requests)/10)
			v := Refuted
			if a >= floor && b < 0.2*a {
				v = Pass
			}
			detail := fmt.Sprintf("upstream read pauses: s5 %d vs s2 %d (a bottleneck would pause at least %.0f times in s2's %d requests); p99 %.1f ms vs %.1f ms. %s", int(b), int(a), floor, s2.Requests, s5.P99Ms, s2.P99Ms, downloadsNotWindowBound(s5))
			if a == 0 && b == 0 {
				ratio = math.NaN()
			}
			return v, ratio, "s5 paused / s2 paused", nums{"s2_paused": a, "s5_paused": b, "s2_p99_ms": s2.P99Ms, "s5_p99_ms": s5.P99Ms}, detail
		}},
	{id: "H-D upload", title: "a small receive window bounds uploads across a round trip", roles: []string{"control", "small-window"},
		eval: uploadWindowCall},
	{id: "H-E", title: "exact_balance evens workers inside a pod", roles: []string{"control", "balanced"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			c, e := get("control"), get("balanced")
			ratio := ratioOf(e.WorkerCVMean, c.WorkerCVMean)
			v := Investigate
			switch {
			case c.WorkerCVMean == 0:
				v = Inconclusive
			case e.WorkerCVMean < 0.9*c.WorkerCVMean:
				v = Pass
			}
			return v, ratio, "worker CV mean s13 / control", nums{"control_worker_cv_mean": c.WorkerCVMean, "s13_worker_cv_mean": e.WorkerCVMean,
					"control_worker_cv_max": c.WorkerCVMax, "s13_worker_cv_max": e.WorkerCVMax, "control_cv": c.CV, "s13_cv": e.CV},
				fmt.Sprintf("mean per-pod worker CV %.3f with exact_balance vs %.3f control (max %.3f vs %.3f); pod-level CV %.3f vs %.3f, unchanged as expected",
					e.WorkerCVMean, c.WorkerCVMean, e.WorkerCVMax, c.WorkerCVMax, e.CV, c.CV)
		}},
	{id: "S11", title: "cost of a realistic filter chain", roles: []string{"control", "filters"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s2, s11 := get("control"), get("filters")
			// Both runs saturate one worker, so the throughput it loses is the chain's share of
			// its time: a steadier measure than the tail, which moves with the queue.
			loss := 1 - ratioOf(s11.RPS, s2.RPS)
			v := Negligible
			if loss > 0.15 {
				v = Significant
			}
			return v, loss, "hot-worker throughput lost", nums{"s2_p99_ms": s2.P99Ms, "s11_p99_ms": s11.P99Ms, "s2_rps": s2.RPS, "s11_rps": s11.RPS},
				fmt.Sprintf("the saturated worker served %.0f rps with the chain vs %.0f without (%.0f%% less); p99 %.1f ms vs %.1f ms",
					s11.RPS, s2.RPS, 100*loss, s11.P99Ms, s2.P99Ms)
		}},
	{id: "WAYPOINT", title: "concentration carries through the waypoint hop", roles: []string{"baseline", "trigger"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s6, s7 := get("baseline"), get("trigger")
			w6, w7 := tierCV(s6.Waypoint), tierCV(s7.Waypoint) // spread of requests across waypoint pods
			v := Investigate
			if s7.CV > 2*s6.CV && w7 > w6 {
				v = Confirmed
			}
			n := nums{"s6_cv": s6.CV, "s7_cv": s7.CV, "s6_waypoint_cv": w6, "s7_waypoint_cv": w7}
			busy := "waypoint busy time: not measured on this target"
			if s6.Waypoint != nil && s7.Waypoint != nil {
				busy = "waypoint " + busyVs(*s7.Waypoint, *s6.Waypoint)
				if s6.Waypoint.BusyMeasured && s7.Waypoint.BusyMeasured {
					n["s7_waypoint_busy_max"], n["s6_waypoint_busy_max"] = s7.Waypoint.BusyMax, s6.Waypoint.BusyMax
				}
			}
			return v, ratioOf(w7, w6), "waypoint CV s7 / s6", n,
				fmt.Sprintf("gateway CV %.3f (s7) vs %.3f (s6); CV of requests across waypoint pods %.3f vs %.3f; %s",
					s7.CV, s6.CV, w7, w6, busy)
		}},
	{id: "S12", title: "one gRPC ClientConn means one pod", roles: []string{"one-conn"},
		eval: func(get lookup, pods int) (string, float64, string, nums, string) {
			s12 := get("one-conn")
			want := math.Sqrt(float64(pods - 1))
			v := Investigate
			if int(s12.ConnectionsTotal) == 1 && math.Abs(s12.CV-want) < 1e-3 {
				v = Confirmed
			}
			return v, ratioOf(s12.CV, want), "CV / sqrt(n-1)", nums{"cv": s12.CV, "expected": want, "k": s12.ConnectionsTotal},
				fmt.Sprintf("%d connection(s); CV %.3f against sqrt(%d) = %.3f", int(s12.ConnectionsTotal), s12.CV, pods-1, want)
		}},
	{id: "S9", title: "slow streams tax fast ones on a shared connection", roles: []string{"control", "slow"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s2, s9 := get("control"), get("slow")
			// The fast streams' median: a tax the slow streams put on them moves the bulk of
			// their latencies, while a saturated worker's tail moves run to run with when it
			// gets to read the connection (it dispatches whatever has arrived since).
			ratio := ratioOf(s9.P50Ms, s2.P50Ms)
			v := Confirmed
			why := ""
			if ratio < 1.1 {
				v = Refuted
				why = "; no tax: a slow stream waits on its upstream, not on the worker, and without a stream cap it holds no slot another stream needs"
			}
			if s9.RqIdleTimeout > 0 {
				v = Unexpected
			}
			return v, ratio, "s9 fast p50 / s2 p50", nums{"s2_p50_ms": s2.P50Ms, "s9_p50_ms": s9.P50Ms, "s2_p99_ms": s2.P99Ms, "s9_p99_ms": s9.P99Ms,
					"s9_slow_p99_ms": s9.SlowP99Ms, "rq_idle_timeout": s9.RqIdleTimeout},
				fmt.Sprintf("fast-stream p50 %.1f ms vs %.1f ms (p99 %.1f vs %.1f); slow streams p99 %.0f ms; stream_idle_timeout fired %d times (slow is not idle)%s",
					s9.P50Ms, s2.P50Ms, s9.P99Ms, s2.P99Ms, s9.SlowP99Ms, int(s9.RqIdleTimeout), why)
		}},
	{id: "S10", title: "time-based rotation fires", roles: []string{"rotation"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			s10 := get("rotation")
			v := Investigate
			if s10.MaxDurationReached > 0 {
				v = Pass
			}
			return v, math.NaN(), "", nums{"max_duration_reached": s10.MaxDurationReached, "goaways": s10.GoAways, "k": s10.ConnectionsTotal, "cv": s10.CV, "p99_ms": s10.P99Ms},
				fmt.Sprintf("downstream_cx_max_duration_reached %d; %d connections opened, %d closed while the load ran; %s%s",
					int(s10.MaxDurationReached), int(s10.ConnectionsTotal), int(s10.GoAways), cvText(s10), drainsText(s10))
		}},
	{id: "S8", title: "a larger per-connection buffer means fewer read pauses", roles: []string{"control", "buffers"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			c, s8 := get("control"), get("buffers")
			// Same payload, same client; compare pauses per request, as throughput may differ.
			a := ratioOf(c.FlowControlPaused, float64(max(1, c.Requests)))
			b := ratioOf(s8.FlowControlPaused, float64(max(1, s8.Requests)))
			v := Confirmed
			switch {
			case c.FlowControlPaused == 0 && s8.FlowControlPaused == 0:
				v = Inconclusive // nothing filled a buffer in either run
			case b >= a:
				v = Refuted
			}
			return v, ratioOf(b, a), "pauses per request s8 / control", nums{"control_paused": c.FlowControlPaused, "s8_paused": s8.FlowControlPaused,
					"s8_rx_buffered_peak": s8.Peaks.RxBuffered, "control_rx_buffered_peak": c.Peaks.RxBuffered, "s8_p99_ms": s8.P99Ms, "control_p99_ms": c.P99Ms},
				fmt.Sprintf("upstream read pauses %d with a 4 MiB buffer vs %d with the 1 MiB default (64 KiB responses both); peak upstream bytes buffered %.1f MiB vs %.1f MiB; p99 %.1f ms vs %.1f ms",
					int(s8.FlowControlPaused), int(c.FlowControlPaused), s8.Peaks.RxBuffered/(1<<20), c.Peaks.RxBuffered/(1<<20), s8.P99Ms, c.P99Ms)
		}},
}

// tierCV is the waypoint tier's spread of requests: the gateway's pools to the waypoint are
// long-lived, so few of their connections are opened inside a window, and the requests show
// where the work went.
func tierCV(t *Tier) float64 {
	if t == nil {
		return 0
	}
	return t.CVRequests
}

// rotated says, from stats a real gateway exposes, that rotation worked: the gateway's own
// counter of its limit moved (limitHits), and the client opened more connections in the window
// than it did without the knob (the growth of downstream_cx_total).
func rotated(r, control *Result, limitHits float64) bool {
	return limitHits > 0 && r.ConnectionsTotal > control.ConnectionsTotal
}

func rotationText(r, control *Result, limitHits float64, stat, what string) string {
	return fmt.Sprintf("%d connections opened in the window (%d without rotation), %d closed while the load ran; %s %d (%s)%s",
		int(r.ConnectionsTotal), int(control.ConnectionsTotal), int(r.GoAways), stat, int(limitHits), what, drainsText(r))
}

// drainsText adds the emulator's own count of drains, where there is one.
func drainsText(r *Result) string {
	if r.DrainsStarted == 0 {
		return ""
	}
	return fmt.Sprintf("; the emulated gateway began %d drains", int(r.DrainsStarted))
}

// busyVs compares the hottest workers of two runs, or says that the target cannot tell: Envoy's
// only measure of a worker's busy time is its dispatcher stats, off unless the bootstrap turns
// them on. Where the first run's pods export their loops' own signals, the call cites them.
func busyVs(a, b Tier) string {
	_, okA := a.Busy()
	_, okB := b.Busy()
	s := fmt.Sprintf("hottest worker %s busy vs %s", a.BusyText(), b.BusyText())
	if !okA || !okB {
		s = "per-worker busy time: not measured on this target (Envoy measures it only with the bootstrap's enable_dispatcher_stats)"
	}
	if a.Loop != "" {
		s += "; its own stats: " + a.Loop
	}
	return s
}
