package sweep

import (
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/stacks"
)

// OverTimeRule states how a value is chosen on a scenario whose pool changes (a scale-out).
const OverTimeRule = "the value with the fewest drains per second (the least reconnect cost) among those that brought the pool " +
	"within chance after the event (time to balance within the window) in more than half of their runs; ties go to the " +
	"faster balance, and the numbers are the median run's"

// recommendOverTime picks a rotation value for a scale-out: fast enough that the new pods get
// their share within the window, no faster. A duration value whose reconnects come in bursts
// (lockstep) is named as such, with count rotation as the lever that avoids them.
func recommendOverTime(sw *Sweep, spec stacks.KnobSpec) *Recommendation {
	rec := &Recommendation{Rule: OverTimeRule}
	best, bestAgree := choose(sw, func(n Numbers) (string, bool) {
		if n.BalancedS == nil || *n.BalancedS < 0 {
			return "", false
		}
		return fmt.Sprintf("balanced %.1f s after the event, %.2f drains/s, reconnects peaked at %.0f/s", *n.BalancedS, n.DrainsPerS, n.StormPeak), true
	}, func(p, best *Point) bool { return balanced(p) < balanced(best) })
	if best == nil {
		var slow []string
		for _, p := range sw.Points {
			if p.Status == analysis.StatusOK {
				slow = append(slow, p.Value)
			}
		}
		rec.Why = fmt.Sprintf("no value of %s brought the pool within chance after the event inside the window (%s): the new pods stayed short of their share; try values that rotate more often", spec.Path, strings.Join(slow, ", "))
		return rec
	}
	rec.Value, rec.Agree = best.Value, bestAgree
	rec.Why = fmt.Sprintf("%s=%s: balanced %.1f s after the event, %.2f drains per second, reconnects peaked at %.0f/s, p99 %.1f ms",
		spec.Path, best.Value, balanced(best), best.DrainsPerS, best.StormPeak, best.P99Ms)
	if note := lockstepNote(spec, best); note != "" {
		rec.Why += "; " + note
	}
	rec.EnvoyFilter, rec.Preview = diagnose.Patch("gateway-"+strings.ReplaceAll(folderKnob(spec), "_", "-"), "sweep", spec.Path, best.Value, listenerOf(sw), sw.Scenario)
	return rec
}

func balanced(p *Point) float64 {
	if p.BalancedS == nil {
		return -1
	}
	return *p.BalancedS
}

// lockstepNote says when duration rotation reconnected in bursts: connections that opened
// together reach max_connection_duration together (Envoy 1.35 has no jitter for it), where
// max_requests_per_connection lets each rotate at its own pace.
func lockstepNote(spec stacks.KnobSpec, p *Point) string {
	if !strings.HasSuffix(spec.Path, ".max_connection_duration") || p.Bursts < 2 || p.BurstShare < 0.8 {
		return ""
	}
	return fmt.Sprintf("its reconnects came in lockstep (%d bursts carrying %.0f%% of them): count rotation "+
		"(max_requests_per_connection) rotates each connection at its own pace and avoids the bursts where the connections' "+
		"request rates differ (see 18-lockstep-count)", p.Bursts, 100*p.BurstShare)
}
