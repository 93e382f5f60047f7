package calibrate

import (
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
)

// Markdown renders the calibration as the docs show it (command says how it was measured, as
// Markdown): the calls side by side, then each scenario's numbers on both targets, what was
// compared, and what was not and why.
func (r *Report) Markdown(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured with %s.\n\n", command)
	b.WriteString("| call | local | sim |\n|---|---|---|\n")
	for _, c := range r.Calls {
		mark := ""
		switch {
		case c.Local != c.Sim && c.Why != "":
			mark = " (differs: " + c.Why + ")"
		case c.Local != c.Sim:
			mark = " **differs**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s%s |\n", c.ID, c.Local, c.Sim, mark)
	}
	b.WriteString("\n| scenario | connections local / sim | CV local / sim (chance) | hottest worker local / sim | rps local / sim | p99 ms local / sim | compared |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		l, s := row.Local, row.Sim
		if !l.OK() || !s.OK() {
			fmt.Fprintf(&b, "| %s | | | | | | %s |\n", row.Scenario, strings.Join(row.Skipped, "; "))
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f / %.0f | %.3f / %.3f (%s / %s) | %s / %s | %.0f / %.0f | %.1f / %.1f | %s |\n",
			row.Scenario, l.ConnectionsTotal, s.ConnectionsTotal, l.CV, s.CV, short(l.ChanceVerdict), short(s.ChanceVerdict),
			busy(l), busy(s), l.RPS, s.RPS, l.P99Ms, s.P99Ms, row.compared())
	}
	b.WriteString("\nWhat was not compared, and why:\n\n")
	for _, row := range r.Rows {
		for _, why := range row.Skipped {
			fmt.Fprintf(&b, "- %s: %s\n", row.Scenario, why)
		}
	}
	return b.String()
}

// compared lists the row's checks with their outcome.
func (row *Row) compared() string {
	var parts []string
	for _, c := range row.Checks {
		mark := "equal"
		switch {
		case !c.OK:
			mark = "FAILS"
		case c.What == "hottest worker" || c.What == "p99":
			mark = "within"
		}
		parts = append(parts, c.What+" "+mark)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func busy(r *analysis.Result) string {
	if !r.BusyMeasured {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*r.BusyMax)
}

// short is a chance verdict in a word.
func short(v string) string {
	switch v {
	case analysis.MoreConcentrated:
		return "concentrated"
	case analysis.MoreEven:
		return "even"
	case "":
		return "-"
	}
	return "within"
}
