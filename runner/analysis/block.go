package analysis

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Header describes the run an evaluation block belongs to.
type Header struct {
	Target      string
	Pods        int
	Concurrency int
	Repeat      int
}

// WriteBlock prints the hypothesis evaluation block: one line per call, with the ratio and the
// numbers behind it.
func WriteBlock(w io.Writer, h Header, vs []Verdict) {
	fmt.Fprintf(w, "\nHypothesis evaluation (%s target: %d pods x %d worker(s), %d run(s) per scenario)\n",
		h.Target, h.Pods, h.Concurrency, max(1, h.Repeat))
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
