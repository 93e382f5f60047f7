package analysis

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/igwlab/igwlab/stacks"
)

// Header describes the run an evaluation block belongs to.
type Header struct {
	Target      string
	Pods        int
	Concurrency int
	Repeat      int
	// EnvoyDefaults, ClientRTTMs and UpstreamRTTMs are the target's (gateway.Info's).
	EnvoyDefaults              string
	ClientRTTMs, UpstreamRTTMs float64
}

// InForce says which Envoy release's defaults and which round-trip times the run had: "Envoy
// 1.35 defaults (Istio 1.27); round-trip time 20 ms clients-gateway, 20 ms gateway-upstreams".
// Empty when the target said neither.
func (h Header) InForce() string {
	var parts []string
	if h.EnvoyDefaults != "" {
		text := "Envoy " + h.EnvoyDefaults + " defaults"
		if r, err := stacks.LookupEnvoy(h.EnvoyDefaults); err == nil {
			text += " (Istio " + r.Istio + ")"
		}
		parts = append(parts, text)
	}
	if h.ClientRTTMs > 0 || h.UpstreamRTTMs > 0 {
		parts = append(parts, fmt.Sprintf("round-trip time %g ms clients-gateway, %g ms gateway-upstreams", h.ClientRTTMs, h.UpstreamRTTMs))
	}
	return strings.Join(parts, "; ")
}

// departsFromDefault says whether the run differs from a default local run in the Envoy
// defaults or round-trip time it had.
func (h Header) departsFromDefault() bool {
	return (h.EnvoyDefaults != "" && h.EnvoyDefaults != stacks.DefaultEnvoy) || h.ClientRTTMs > 0 || h.UpstreamRTTMs > 0
}

// WriteBlock prints the hypothesis evaluation block: one line per call, with the ratio and the
// numbers behind it.
func WriteBlock(w io.Writer, h Header, vs []Verdict) {
	fmt.Fprintf(w, "\nHypothesis evaluation (%s target: %d pods x %d worker(s), %d run(s) per scenario)\n",
		h.Target, h.Pods, h.Concurrency, max(1, h.Repeat))
	if h.departsFromDefault() {
		fmt.Fprintf(w, "in force: %s\n", h.InForce())
	}
	fmt.Fprintln(w, strings.Repeat("-", 100))
	var notRun []string
	for _, v := range vs {
		if v.Verdict == Skipped && strings.HasPrefix(v.Detail, "not in this run") {
			notRun = append(notRun, v.ID)
			continue
		}
		ratio := ""
		if v.Ratio != nil && !math.IsInf(*v.Ratio, 0) && !math.IsNaN(*v.Ratio) {
			ratio = fmt.Sprintf("%.2f", *v.Ratio)
			if v.RatioMin != nil {
				ratio += fmt.Sprintf(" [%.2f..%.2f]", *v.RatioMin, *v.RatioMax)
			}
		} else if v.Ratio != nil && math.IsInf(*v.Ratio, 1) {
			ratio = "inf"
		}
		verdict := v.Verdict
		if v.Confidence != "" {
			verdict += " (" + v.Confidence + ")"
		}
		fmt.Fprintf(w, "%-11s %-24s %s\n", v.ID, verdict, v.Title)
		if ratio != "" {
			fmt.Fprintf(w, "%-11s %s = %s\n", "", v.RatioName, ratio)
		}
		fmt.Fprintf(w, "%-11s %s\n", "", v.Detail)
		if len(v.Disturbed) > 0 {
			fmt.Fprintf(w, "%-11s DISTURBED: a fault hit %s while it ran (see its faults); rerun before trusting this call\n",
				"", strings.Join(v.Disturbed, ", "))
		}
	}
	if len(notRun) > 0 {
		fmt.Fprintf(w, "not evaluated (their scenarios were not in this run): %s\n", strings.Join(notRun, ", "))
	}
	fmt.Fprintln(w, strings.Repeat("-", 100))
}
