package capacity

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/report"
)

func (c *Capacity) header() []string { return Columns(c.SLO) }

// Columns are the capacity table's columns for an SLO (the docs' tables are checked against
// them).
func Columns(slo SLO) []string {
	return []string{"curve", "offered rps", "served rps", slo.Percentile + " ms", "meets " + slo.Text, "send lag p99 ms", "unsent", "connections", "hottest worker"}
}

func (c *Capacity) rows() [][]string {
	var out [][]string
	for _, cv := range c.Curves {
		for _, st := range sorted(cv.Steps) {
			if st.Status != analysis.StatusOK {
				out = append(out, []string{cv.Name, fmt.Sprintf("%.0f", st.Offered), st.Why})
				continue
			}
			meets := "yes"
			if !st.Meets {
				meets = "no: " + st.Why
			}
			hot := "n/a"
			if st.BusyMeasured {
				hot = fmt.Sprintf("%s %.0f%%", st.HotWorker, 100*st.Busy)
			}
			out = append(out, []string{cv.Name, fmt.Sprintf("%.0f", st.Offered), fmt.Sprintf("%.0f", st.Achieved), fmt.Sprintf("%.1f", st.LatencyMs),
				meets, fmt.Sprintf("%.2f", st.SendLagP99Ms), fmt.Sprint(st.Unsent), fmt.Sprintf("%.0f", st.Connections), hot})
		}
	}
	return out
}

// sorted is the steps by offered rate: the curve as it is drawn.
func sorted(steps []*Step) []*Step {
	out := append([]*Step(nil), steps...)
	slices.SortStableFunc(out, func(a, b *Step) int { return cmp.Compare(a.Offered, b.Offered) })
	return out
}

// notes are the result, curve by curve, and the ratio.
func (c *Capacity) notes() []string {
	var out []string
	for _, cv := range c.Curves {
		s := fmt.Sprintf("%s: %s", cv.Label, capText(cv, c.SLO))
		if cv.Bound != "" {
			s += fmt.Sprintf("; bound by the %s: %s", cv.Bound, cv.BoundDetail)
		}
		if cv.Saturated != "" {
			s += "; saturates at " + cv.Saturated
		}
		out = append(out, s+".")
	}
	out = append(out, "Result: "+c.Statement+".")
	if c.Rotation != nil {
		out = append(out, c.Rotation.Text)
	}
	return out
}

// WriteText writes the table and the result.
func (c *Capacity) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Capacity of %s at %s (%s target: %d pods x %d worker(s); open-loop runs of %gs, latency from each request's intended send time)\n",
		c.Scenario, c.SLO.Text, c.Target, c.Pods, c.Concurrency, c.WindowS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(c.header(), "\t"))
	for _, r := range c.rows() {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range c.notes() {
		if _, err := fmt.Fprintf(w, "\n%s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteReport draws the curves and writes report.html into the result's folder.
func WriteReport(c *Capacity) error {
	var curves []report.Curve
	points := 0
	for _, cv := range c.Curves {
		rc := report.Curve{Name: cv.Label}
		for _, st := range sorted(cv.Steps) {
			if st.Status == analysis.StatusOK {
				rc.X, rc.Y = append(rc.X, st.Offered), append(rc.Y, st.LatencyMs)
				points++
			}
		}
		curves = append(curves, rc)
	}
	sec := report.Section{Title: "Capacity of " + c.Scenario + " at " + c.SLO.Text,
		Intro: []string{fmt.Sprintf("%s target: %d gateway pods x %d worker(s). Each step is an open-loop run of %gs at a constant arrival rate, with latency measured from each request's intended send time; its folder holds the files a suite scenario writes.",
			c.Target, c.Pods, c.Concurrency, c.WindowS)},
		Header: c.header(), Rows: c.rows(), Notes: c.notes()}
	if points > 0 {
		plot, err := report.CapacityPlot(c.SLO.Text, c.SLO.LimitMs(), curves)
		if err != nil {
			return err
		}
		sec.Plots = []report.Plot{plot}
	}
	return report.WriteSection(c.Dir, sec)
}
