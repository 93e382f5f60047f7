package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/igwlab/igwlab/runner/analysis"
)

// Compare writes two runs side by side: each scenario's spread, load and tail, and each call.
func Compare(w io.Writer, a, b *Run, nameA, nameB string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "A: %s (%s, %d pods x %d)\tB: %s (%s, %d pods x %d)\n", nameA, a.Target, a.Pods, a.Concurrency, nameB, b.Target, b.Pods, b.Concurrency)
	if a.InForce != "" || b.InForce != "" {
		// Two runs under different Envoy defaults or round trips: what an upgrade or a network changes.
		fmt.Fprintf(tw, "A: %s\tB: %s\n", orDash(a.InForce), orDash(b.InForce))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SCENARIO\tk A\tk B\tCV A\tCV B\trps A\trps B\tp99 A\tp99 B\tdrained A\tdrained B")
	seen := map[string]bool{}
	for _, order := range [][]string{a.Order, b.Order} {
		for _, n := range order {
			if seen[n] {
				continue
			}
			seen[n] = true
			ra, rb := a.Scenarios[n], b.Scenarios[n]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n,
				first(ra, func() string { return fmt.Sprint(int(ra.ConnectionsTotal)) }),
				first(rb, func() string { return fmt.Sprint(int(rb.ConnectionsTotal)) }),
				cell(ra, func() string { return fmt.Sprintf("%.3f", ra.CV) }),
				cell(rb, func() string { return fmt.Sprintf("%.3f", rb.CV) }),
				cell(ra, func() string { return fmt.Sprintf("%.0f", ra.RPS) }),
				cell(rb, func() string { return fmt.Sprintf("%.0f", rb.RPS) }),
				cell(ra, func() string { return fmt.Sprintf("%.1f", ra.P99Ms) }),
				cell(rb, func() string { return fmt.Sprintf("%.1f", rb.P99Ms) }),
				cell(ra, func() string { return fmt.Sprint(int(ra.GoAways)) }),
				cell(rb, func() string { return fmt.Sprint(int(rb.GoAways)) }))
		}
	}
	fmt.Fprintln(tw, "\nCALL\tA\tB\tratio A\tratio B")
	for _, v := range a.Evaluation {
		vb := b.Hypotheses[v.ID]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.Verdict, orDash(vb.Verdict), fmtRatio(v.Ratio), fmtRatio(vb.Ratio))
	}
	return tw.Flush()
}

// first is the row's first cell for a run: it names the status when the scenario did not run.
func first(r *analysis.Result, f func() string) string {
	if r != nil && !r.OK() {
		return string(r.Status)
	}
	return cell(r, f)
}

func cell(r *analysis.Result, f func() string) string {
	if !r.OK() {
		return "-"
	}
	return f()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}
