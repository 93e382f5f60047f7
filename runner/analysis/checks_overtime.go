package analysis

import (
	"fmt"
	"math"
	"strings"
)

// The calls on a pool that changes under load (a scenario's events) and on what the
// autoscaler sees. They read the over-time measures (OverTime, HPABlind), which come from
// the stats a real gateway exposes, sampled through the window.
func init() {
	checks = append(checks, overTimeChecks...)
}

var overTimeChecks = []check{
	{id: "HPA-blind", title: "the autoscaler cannot see a pegged worker", roles: []string{"baseline", "trigger"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			many, few := get("baseline").HPA, get("trigger").HPA
			if many == nil || few == nil {
				return Inconclusive, 0, "", nil, "no samples of the window"
			}
			v := Investigate
			if few.Blind && !many.Blind {
				v = Pass
			}
			return v, few.HeldS, "blind spell (s) with few connections", nums{"few_utilisation": few.UtilisationMean,
					"few_busy_max": few.BusyMaxMean, "few_held_s": few.HeldS, "many_utilisation": many.UtilisationMean,
					"many_busy_max": many.BusyMaxMean, "many_held_s": many.HeldS, "need_s": few.NeedS},
				fmt.Sprintf("few connections: %s; many connections: %s", few.Text, many.Text)
		}},
	{id: "S15 scale-out", title: "new pods get nothing until connections move", roles: []string{"pinned", "rotated"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			p, r := get("pinned").OverTime, get("rotated").OverTime
			if p == nil || r == nil {
				return Inconclusive, 0, "", nil, "no events in the window"
			}
			v := Investigate
			if p.NewShareEnd < 0.5*p.FairShareEnd && p.BalancedAtS < 0 && r.NewShareEnd >= 0.5*r.FairShareEnd && r.BalancedAtS >= 0 {
				v = Pass
			}
			return v, p.NewShareEnd, "new pods' share without rotation", nums{"pinned_new_share": p.NewShareEnd,
					"rotated_new_share": r.NewShareEnd, "fair_share": p.FairShareEnd, "pinned_balanced_s": p.BalancedAtS,
					"rotated_balanced_s": r.BalancedAtS},
				fmt.Sprintf("new pods carry %.0f%% of requests without rotation and %.0f%% with it (fair %.0f%%); time to balance: %s without, %s with",
					100*p.NewShareEnd, 100*r.NewShareEnd, 100*p.FairShareEnd, balancedText(p), balancedText(r))
		}},
	{id: "S16 rollout", title: "a rolling restart leaves its skew behind", roles: []string{"rollout"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			res := get("rollout")
			o := res.OverTime
			if o == nil {
				return Inconclusive, 0, "", nil, "no events in the window"
			}
			done := false
			for _, m := range o.Events {
				done = done || m.Kind == "rollout-done"
			}
			v := Confirmed
			switch {
			case !done:
				v = Investigate
			case strings.HasPrefix(o.SkewChance, WithinChance), strings.HasPrefix(o.SkewChance, MoreEven):
				v = Partial // it rolled, and this time the connections landed evenly
			}
			return v, o.SkewEnd, "CV of request rate after the rollout", nums{"new_conn_share": o.NewConnShare,
					"skew_end": o.SkewEnd, "storm_peak_cps": o.StormPeak, "errors": float64(res.Errors)},
				fmt.Sprintf("rollout %s; %.0f%% of connections on the new pods at the end; skew left: CV %.2f, %s; reconnects peaked at %.0f/s; %d client errors",
					doneText(done), 100*o.NewConnShare, o.SkewEnd, o.SkewChance, o.StormPeak, res.Errors)
		}},
	{id: "S17 push", title: "a config push drains every connection at once", roles: []string{"push"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			res := get("push")
			o := res.OverTime
			if o == nil {
				return Inconclusive, 0, "", nil, "no events in the window"
			}
			v := Investigate
			if len(o.Bursts) == 1 && o.StormPeak > 3*math.Max(o.StormBaseline, 1) {
				v = Pass
			}
			detail := fmt.Sprintf("%d reconnect storm(s): peak %.0f connections/s against %.1f/s before; %.0f drained (downstream_cx_drain_close); %d client errors",
				len(o.Bursts), o.StormPeak, o.StormBaseline, res.DrainClose, res.Errors)
			if o.HandshakePeak > 0 {
				detail += fmt.Sprintf("; %.0f TLS handshakes/s at the peak (ssl.handshake)", o.HandshakePeak)
			}
			return v, o.StormPeak, "peak reconnects per second", nums{"storm_peak_cps": o.StormPeak, "baseline_cps": o.StormBaseline,
				"handshake_peak": o.HandshakePeak, "bursts": float64(len(o.Bursts)), "drain_close": res.DrainClose}, detail
		}},
	{id: "S18 lockstep", title: "duration rotation reconnects in bursts, count rotation does not", roles: []string{"duration", "count"},
		eval: func(get lookup, _ int) (string, float64, string, nums, string) {
			d, c := get("duration").OverTime, get("count").OverTime
			if d == nil || c == nil {
				return Inconclusive, 0, "", nil, "no events in the window"
			}
			v := Investigate
			// Duration rotation keeps nearly every reconnect in its bursts; count rotation's
			// share falls as the connections' paces drift apart.
			if len(d.Bursts) >= 2 && d.BurstShare >= 0.8 && c.BurstShare <= 0.6*d.BurstShare {
				v = Pass
			}
			return v, d.BurstShare, "share of reconnects in bursts, duration rotation", nums{"duration_bursts": float64(len(d.Bursts)),
					"duration_period_s": d.PeriodS, "duration_burst_share": d.BurstShare, "count_bursts": float64(len(c.Bursts)),
					"count_burst_share": c.BurstShare},
				fmt.Sprintf("duration rotation: %d bursts every %.1f s carrying %.0f%% of reconnects; count rotation: %d bursts, %.0f%%",
					len(d.Bursts), d.PeriodS, 100*d.BurstShare, len(c.Bursts), 100*c.BurstShare)
		}},
}

func balancedText(o *OverTime) string {
	if o.BalancedAtS < 0 {
		return "not within the window"
	}
	return fmt.Sprintf("%.1f s", o.BalancedAtS)
}

func doneText(done bool) string {
	if done {
		return "completed"
	}
	return "did not complete in the window"
}
