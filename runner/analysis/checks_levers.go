package analysis

import (
	"fmt"
	"math"
)

// The calls on levers that quietly do nothing for some clients: rotation for long-lived
// streams, a stream cap for a gRPC client that queues, workers past a CPU limit. Each names
// the lever that does work, with the numbers behind it.
func init() {
	checks = append(checks, leverChecks...)
}

var leverChecks = []check{
	{id: "S19 streams", title: "rotation does not move long-lived streams; max_stream_duration does", roles: []string{"control", "rotated", "ended"},
		eval: streamsCall},
	{id: "S20 gRPC client", title: "a channel pool or round_robin spreads a gRPC client the stream cap cannot", roles: []string{"capped", "rotated", "pool", "round-robin"},
		eval: grpcClientCall}, {id: "S21 CPU limit", title: "workers past the CPU limit are throttled and lengthen the tail", roles: []string{"at-limit", "over-limit"},
		eval: cpuLimitCall},
}

// streamsCall: with the rotation alone the streams' load stays where it was, on connections
// the gateway drained and their streams keep open; with max_stream_duration on top, the streams
// end, the drained connections close, and the next streams land elsewhere.
func streamsCall(get lookup, _ int) (string, float64, string, nums, string) {
	c, r, e := get("control"), get("rotated"), get("ended")
	cs, rs, es := c.LongStreams, r.LongStreams, e.LongStreams
	if cs == nil || rs == nil || es == nil {
		return Inconclusive, math.NaN(), "", nil, "a scenario of this call ran without a client of long-lived streams"
	}
	// The rotation drained the connections and their streams stayed on them.
	ineffective := rs.LoadCV >= 0.8*cs.LoadCV && rs.DrainedConns > 0 && rs.PastLimitShare >= 0.5
	spreads := es.LoadCV <= 0.6*cs.LoadCV && es.MaxDurationReached > 0 && e.ConnectionsTotal > r.ConnectionsTotal
	v := Investigate
	switch {
	case ineffective && spreads:
		v = Pass
	case ineffective:
		v = Partial // the rotation did nothing, as said; the lever that works did not show it this time
	}
	verdict := "rotation ineffective for these streams"
	if !ineffective {
		verdict = "rotation moved these streams this time"
	}
	detail := fmt.Sprintf("%s: load CV %.3f with %s and %.3f without; the rotation drained %d connection(s) and their streams kept them open: %.0f%% of the streams' seconds came after the limit, %d still open at the window's end, up to %.1f s after the drain began; %s. "+
		"The lever that works: max_stream_duration with the rotation ends the streams (downstream_rq_max_duration_reached %d), "+
		"the drained connections close and the next streams land afresh: %d connections, load CV %.3f (%.0f%% of the rotation's)",
		verdict, rs.LoadCV, rs.Limit, cs.LoadCV, rs.DrainedConns, 100*rs.PastLimitShare, rs.DrainedOpen, rs.DrainedOpenS, rs.endedText(),
		int(es.MaxDurationReached), int(e.ConnectionsTotal), es.LoadCV, 100*ratioOf(es.LoadCV, rs.LoadCV))
	return v, ratioOf(es.LoadCV, rs.LoadCV), "load CV ended / rotated", nums{
		"control_load_cv": cs.LoadCV, "rotated_load_cv": rs.LoadCV, "ended_load_cv": es.LoadCV,
		"rotated_past_limit_share": rs.PastLimitShare, "rotated_drained": float64(rs.DrainedConns),
		"rotated_drained_open": float64(rs.DrainedOpen), "rotated_max_requests_reached": r.MaxRequestsReached,
		"ended_max_duration_reached": es.MaxDurationReached, "ended_k": e.ConnectionsTotal, "rotated_k": r.ConnectionsTotal,
		"ended_p99_ms": e.P99Ms, "rotated_p99_ms": r.P99Ms}, detail
}

// grpcClientCall: a gRPC client with one ClientConn sits on one pod whatever the stream cap
// (it queues at the cap); a pool of ClientConns or round_robin over the pods' addresses
// spread it from the client's side, with no change to the gateway; count rotation spreads it
// from the gateway's side, at the cost of its reconnects.
func grpcClientCall(get lookup, pods int) (string, float64, string, nums, string) {
	capped, rot, pool, rr := get("capped"), get("rotated"), get("pool"), get("round-robin")
	one := math.Sqrt(float64(pods - 1))
	capNothing := capped.ConnectionsTotal <= 1 && capped.CVRequests >= 0.9*one
	poolSpreads := pool.CVRequests <= 0.5*capped.CVRequests && pool.ChanceVerdict != MoreConcentrated
	rrSpreads := rr.CVRequests <= 0.5*capped.CVRequests
	v := Investigate
	switch {
	case capNothing && poolSpreads && rrSpreads:
		v = Pass
	case capNothing && (poolSpreads || rrSpreads):
		v = Partial
	}
	var fixes []string
	if poolSpreads {
		fixes = append(fixes, fmt.Sprintf("a pool of %d ClientConns", int(pool.ConnectionsTotal)))
	}
	if rrSpreads {
		fixes = append(fixes, fmt.Sprintf("round_robin over %d addresses", int(rr.ConnectionsTotal)))
	}
	fixText := "no client-side lever spread it this time"
	if len(fixes) > 0 {
		fixText = "fixes it without the server: " + joinAnd(fixes)
	}
	detail := fmt.Sprintf("%s. The stream cap: %d connection(s), requests CV %.3f (one pod is %.3f): the client queued at the cap; "+
		"pool: %s, requests CV %.3f; round_robin: %s, requests CV %.3f; count rotation (a gateway change): %s, requests CV %.3f, p99 %.1f ms vs %.1f ms with the pool",
		fixText, int(capped.ConnectionsTotal), capped.CVRequests, one, cvText(pool), pool.CVRequests, cvText(rr), rr.CVRequests,
		rotationText(rot, capped, rot.MaxRequestsReached, "downstream_cx_max_requests_reached", "requests at or over the limit"),
		rot.CVRequests, rot.P99Ms, pool.P99Ms)
	return v, ratioOf(math.Max(pool.CVRequests, rr.CVRequests), capped.CVRequests), "requests CV client lever / capped", nums{
		"capped_cv_requests": capped.CVRequests, "capped_k": capped.ConnectionsTotal, "pool_cv_requests": pool.CVRequests,
		"pool_k": pool.ConnectionsTotal, "round_robin_cv_requests": rr.CVRequests, "round_robin_k": rr.ConnectionsTotal,
		"rotated_cv_requests": rot.CVRequests, "rotated_k": rot.ConnectionsTotal, "capped_p99_ms": capped.P99Ms,
		"pool_p99_ms": pool.P99Ms, "round_robin_p99_ms": rr.P99Ms, "rotated_p99_ms": rot.P99Ms}, detail
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	out := ""
	for i, x := range xs {
		switch {
		case i == 0:
			out = x
		case i == len(xs)-1:
			out += " and " + x
		default:
			out += ", " + x
		}
	}
	return out
}

// cpuLimitCall: at the same load, a pod with more workers than its CPU limit has cores spends
// each period's quota early and every worker waits for the next one; one with as many workers
// as cores never can.
func cpuLimitCall(get lookup, _ int) (string, float64, string, nums, string) {
	a, o := get("at-limit"), get("over-limit")
	if a.CPU == nil || o.CPU == nil || !o.CPU.Limited {
		return Inconclusive, math.NaN(), "", nil, "no CPU limit read: the target's kubelets gave no CFS counters (container_cpu_cfs_periods_total) for the gateway pods"
	}
	throttled := o.CPU.Throttled > 0
	slower := o.P99Ms > a.P99Ms
	clean := a.CPU.ThrottledShare < 0.05
	v := Investigate
	switch {
	case throttled && slower && clean:
		v = Pass
	case throttled && clean:
		v = Partial // throttled, but the tail did not show it this time
	}
	detail := fmt.Sprintf("%s; p99 %.1f ms, against %.1f ms with %s at the same load. Workers at most the limit's cores cannot spend a period's quota; set the concurrency to the limit (pilot-agent's default when none is set: ISTIO_CPU_LIMIT, the limit rounded up) or the limit to the concurrency",
		o.CPU.Text(), o.P99Ms, a.P99Ms, a.CPU.Text())
	return v, ratioOf(o.P99Ms, a.P99Ms), "p99 over-limit / at-limit", nums{
		"over_workers": float64(o.CPU.Workers), "over_throttled_periods": o.CPU.Throttled, "over_periods": o.CPU.Periods,
		"over_throttled_share": o.CPU.ThrottledShare, "over_throttled_s": o.CPU.ThrottledS, "over_p99_ms": o.P99Ms,
		"at_workers": float64(a.CPU.Workers), "at_throttled_periods": a.CPU.Throttled, "at_p99_ms": a.P99Ms,
		"limit_cores": o.CPU.LimitCores, "over_usage_cores": o.CPU.UsageCores, "at_usage_cores": a.CPU.UsageCores}, detail
}
