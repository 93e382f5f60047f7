package sweep

import (
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/stacks"
)

// Recommendation is the value to set, the rule that chose it, the runs behind it, and how to
// apply it.
type Recommendation struct {
	// Value is "" when no value met the rule (Why says so).
	Value string `json:"value,omitempty"`
	Rule  string `json:"rule"`
	Why   string `json:"why"`
	// Agree lists the runs of the value that meet the rule, with their numbers.
	Agree []string `json:"agree,omitempty"`
	// Holds says in how many of the value's placements the rule held (with --repeat).
	Holds       string `json:"holds,omitempty"`
	EnvoyFilter string `json:"envoyfilter,omitempty"`
	Preview     string `json:"preview,omitempty"`
}

// Rule states how the value is chosen, with the threshold it uses.
func Rule(threshold float64, wellSpread, pods int) string {
	return fmt.Sprintf("the value with the fewest drains per second (the least churn) among those whose spread is as good as chance "+
		"for a well-spread client: CV within or below the chance band of the run's own connections, and at most %.3f, "+
		"the 97.5th percentile of the CV of %d connections placed at random on %d pods; with --repeat, a value "+
		"qualifies when more than half of its runs do, and the numbers are its median run's", threshold, wellSpread, pods)
}

// spreadsWell is the rule for one run.
func spreadsWell(n Numbers, threshold float64) bool {
	return n.Status == analysis.StatusOK && n.ChanceVerdict != analysis.MoreConcentrated && n.Chance != nil && n.CV <= threshold
}

// runsOf are a point's runs (one when the sweep was not repeated).
func (p *Point) runsOf() []Numbers {
	if len(p.Runs) > 0 {
		return p.Runs
	}
	if p.Status == analysis.StatusOK {
		return []Numbers{p.Numbers}
	}
	return nil
}

func recommend(sw *Sweep, spec stacks.KnobSpec, wellSpread int) *Recommendation {
	rec := &Recommendation{Rule: Rule(sw.Threshold, wellSpread, sw.Pods)}
	best, bestAgree := choose(sw, func(n Numbers) (string, bool) {
		return fmt.Sprintf("CV %.3f over %d connections (%s), %.2f drains/s, p99 %.1f ms", n.CV, int(n.Connections), n.ChanceVerdict, n.DrainsPerS, n.P99Ms),
			spreadsWell(n, sw.Threshold)
	}, func(p, best *Point) bool { return X(spec, p.Value, 0) > X(spec, best.Value, 0) })
	if best == nil {
		rec.Why = fmt.Sprintf("no value of %s met the rule: each left the connections more concentrated than a well-spread client's (CV above %.3f); try values that rotate more often", spec.Path, sw.Threshold)
		return rec
	}
	rec.Value, rec.Agree = best.Value, bestAgree
	rec.Holds = holds(best, len(bestAgree))
	rec.Why = fmt.Sprintf("%s=%s: CV %.3f over %d connections (%s; at most %.3f), %.2f drains per second, p99 %.1f ms, %.0f rps, hottest worker %s busy",
		spec.Path, best.Value, best.CV, int(best.Connections), best.ChanceVerdict, sw.Threshold, best.DrainsPerS, best.P99Ms, best.RPS, best.Busy)
	if sw.TLS {
		rec.Why += fmt.Sprintf(", %.2f TLS handshakes per second", best.TLSPerS)
	}
	if lower := cheaper(sw, best); lower != "" {
		rec.Why += "; " + lower
	}
	rec.EnvoyFilter, rec.Preview = diagnose.Patch("gateway-"+strings.ReplaceAll(folderKnob(spec), "_", "-"), "sweep", spec.Path, best.Value, listenerOf(sw), sw.Scenario)
	for _, kv := range sw.Set {
		// The runs held these too: the preview that reproduces them does.
		rec.Preview += " --set " + kv.Path + "=" + kv.Value
	}
	return rec
}

// choose is the value with the fewest drains per second among those more than half of whose
// runs meet the rule (meets says how a run did, and whether it meets it); tie breaks a tie in
// drains. It returns the runs that meet the rule, named.
func choose(sw *Sweep, meets func(Numbers) (string, bool), tie func(p, best *Point) bool) (*Point, []string) {
	var best *Point
	var bestAgree []string
	for _, p := range sw.Points {
		if p.Status != analysis.StatusOK {
			continue
		}
		runs := p.runsOf()
		var agree []string
		for i, n := range runs {
			if text, ok := meets(n); ok {
				name := p.Dir
				if len(runs) > 1 || n.Dir != "" {
					name = fmt.Sprintf("%s run %d", p.Dir, i+1)
				}
				agree = append(agree, name+": "+text)
			}
		}
		if 2*len(agree) <= len(runs) {
			continue
		}
		if best == nil || p.DrainsPerS < best.DrainsPerS || p.DrainsPerS == best.DrainsPerS && tie(p, best) {
			best, bestAgree = p, agree
		}
	}
	return best, bestAgree
}

// holds says how often the rule held for the value: in how many of its placements, and its
// bands over them ("" for a single run).
func holds(p *Point, agree int) string {
	n := len(p.runsOf())
	if n < 2 {
		return ""
	}
	text := fmt.Sprintf("the rule held in %d of %d placements (%.0f%%)", agree, n, 100*float64(agree)/float64(n))
	if p.Bands != nil {
		text += "; " + p.Bands.Text()
	}
	return text
}

// cheaper says what the values with less churn gave up, so the choice reads as a trade.
func cheaper(sw *Sweep, best *Point) string {
	var parts []string
	for _, p := range sw.Points {
		if p.Status == analysis.StatusOK && p != best && p.DrainsPerS < best.DrainsPerS {
			parts = append(parts, fmt.Sprintf("%s (%.2f drains/s) left CV %.3f", p.Value, p.DrainsPerS, p.CV))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "less churn spread worse: " + strings.Join(parts, ", ")
}

func folderKnob(spec stacks.KnobSpec) string { return spec.Path[strings.LastIndex(spec.Path, ".")+1:] }

// listenerOf is the gateway listener the sweep measured (its port goes in the patch).
func listenerOf(sw *Sweep) string {
	if sw.Listener != "" {
		return sw.Listener
	}
	return "0.0.0.0_80"
}
