package predict

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the ranking, the lever to apply and what to expect.
func (p *Prediction) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "igwlab predict: %s on the %s target, %d run(s) per lever; ranked %s\n\n", p.Scenario, p.Target, p.Repeat, p.Rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tlever\tkind\tp99 ms\trps\thottest worker\tCV (chance)\tconnections\tdrains/s\t")
	var notRun []string
	for _, r := range p.Rows {
		if !r.Ran {
			fmt.Fprintf(tw, "%d\t%s\t%s\tnot run\t\t\t\t\t\t\n", r.Rank, r.Label, r.Kind)
			notRun = append(notRun, fmt.Sprintf("%s: %s", r.Label, r.Reason))
			continue
		}
		p99, busy := fmt.Sprintf("%.1f", r.P99Ms), pct(r.BusyMax)
		if b := r.Bands; b != nil {
			p99 += fmt.Sprintf(" [%.1f..%.1f]", b.P99Ms.P5, b.P99Ms.P95)
			busy += fmt.Sprintf(" [%s..%s]", pct(b.HotWorker.P5), pct(b.HotWorker.P95))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.0f\t%s\t%.3f (%s)\t%.0f\t%.2f\t\n", r.Rank, r.Label, r.Kind, p99, r.RPS, busy, r.CV, r.ChanceVerdict, r.Connections, r.DrainsPerS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notRun {
		fmt.Fprintf(w, "not run: %s\n", n)
	}
	fmt.Fprintln(w)
	if p.Best == nil {
		_, err := fmt.Fprintf(w, "Apply: nothing. %s.\n", p.Why)
		return err
	}
	fmt.Fprintf(w, "Apply: %s (%s).\nWhy: %s.\nExpect: %s.\n", p.Best.Label, p.Best.Kind, p.Why, p.Expect)
	if p.Best.Knob != "" {
		fmt.Fprintf(w, "In the lab first: igwlab preview --set %s=%s\n", p.Best.Knob, p.Best.Value)
	}
	p.Fix.WriteText(w)
	_, err := fmt.Fprintln(w, "Per lever: "+strings.TrimSuffix(p.Dir, "/")+"/<lever>/")
	return err
}
