package sweep

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/report"
	"github.com/igwlab/igwlab/stacks"
)

// header and rows are the sweep's table, for the terminal and the report alike.
func (sw *Sweep) header() []string { return Columns(sw.TLS, sw.overTime(), sw.cpu()) }

// Columns are the sweep table's columns: with TLS handshakes, with the over-time measures of a
// scenario with events, with the pods' CPU (the docs' tables are checked against them).
func Columns(tls, overTime, cpu bool) []string {
	h := []string{"value", "CV", "chance (median [95% band])", "against chance", "connections", "drains/s"}
	if tls {
		h = append(h, "TLS handshakes/s")
	}
	if overTime {
		h = append(h, "balanced after event", "reconnect peak/s", "bursts")
	}
	if cpu {
		h = append(h, "CPU used (cores)", "throttled periods", "throttled s")
	}
	return append(h, "p99 ms", "rps", "hottest worker")
}

// cpu says whether the sweep's runs read the pods' CPU limit and throttling (a sweep of their
// workers, or any sweep under a CPU limit).
func (sw *Sweep) cpu() bool {
	for _, p := range sw.Points {
		if p.Limited {
			return true
		}
	}
	return false
}

// overTime says whether the sweep's runs carry over-time measures (a scenario with events).
func (sw *Sweep) overTime() bool {
	for _, p := range sw.Points {
		if p.BalancedS != nil {
			return true
		}
	}
	return false
}

func (sw *Sweep) rows() [][]string {
	var out [][]string
	for _, p := range sw.Points {
		if p.Status != analysis.StatusOK {
			out = append(out, []string{p.Value, string(p.Status) + ": " + p.Reason})
			continue
		}
		band := "n/a"
		if c := p.Chance; c != nil {
			band = fmt.Sprintf("%.3f [%.3f, %.3f]", c.Median, c.Lo, c.Hi)
		}
		r := []string{p.Value, fmt.Sprintf("%.3f", p.CV), band, p.ChanceVerdict, fmt.Sprintf("%d", int(p.Connections)), fmt.Sprintf("%.2f", p.DrainsPerS)}
		if sw.TLS {
			r = append(r, fmt.Sprintf("%.2f", p.TLSPerS))
		}
		if sw.overTime() {
			bal := "not within the window"
			if b := balanced(p); b >= 0 {
				bal = fmt.Sprintf("%.1f s", b)
			}
			r = append(r, bal, fmt.Sprintf("%.0f", p.StormPeak), fmt.Sprintf("%d (%.0f%%)", p.Bursts, 100*p.BurstShare))
		}
		if sw.cpu() {
			r = append(r, fmt.Sprintf("%.2f", p.UsageCores), fmt.Sprintf("%.0f%%", 100*p.ThrottledShare), fmt.Sprintf("%.1f", p.ThrottledS))
		}
		hot := p.Busy
		if p.HotWorker != "" {
			hot = p.HotWorker + " " + p.Busy
		}
		out = append(out, append(r, fmt.Sprintf("%.1f", p.P99Ms), fmt.Sprintf("%.0f", p.RPS), hot))
	}
	return out
}

// WriteText writes the table and the recommendation.
func (sw *Sweep) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Sweep of %s on %s (%s target: %d pods x %d worker(s); %d run(s) per value; window %gs per run, %s)\n",
		sw.Knob, sw.Scenario, sw.Target, sw.Pods, sw.Concurrency, sw.Repeat, sw.WindowS, sw.Window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(sw.header(), "\t"))
	for _, r := range sw.rows() {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !sw.TLS {
		fmt.Fprintln(w, "TLS handshakes/s: not measured (plain HTTP; --tls terminates TLS on the local pool)")
	}
	if len(sw.Set) > 0 {
		fmt.Fprintf(w, "Held in every run: %s\n", strings.Join(setText(sw.Set), ", "))
	}
	sw.writeBands(w)
	if sw.Spread != nil {
		_, err := fmt.Fprintf(w, "\nSpread: %s.\n", sw.Spread.Text)
		return err
	}
	rec := sw.Recommendation
	if rec == nil {
		return nil
	}
	fmt.Fprintf(w, "\nRule: %s.\n", rec.Rule)
	if rec.Value == "" {
		_, err := fmt.Fprintf(w, "No recommendation: %s.\n", rec.Why)
		return err
	}
	fmt.Fprintf(w, "Recommendation: %s.\n", rec.Why)
	if rec.Holds != "" {
		fmt.Fprintf(w, "How often: %s.\n", rec.Holds)
	}
	fmt.Fprintf(w, "Runs that agree:\n")
	for _, a := range rec.Agree {
		fmt.Fprintf(w, "  %s\n", a)
	}
	if rec.EnvoyFilter == "" { // not a knob: the pods' size, set through the stack
		fmt.Fprintf(w, "\nIn the lab:\n  %s\n", rec.Preview)
		return nil
	}
	fmt.Fprintf(w, "\nTry it in the lab first:\n  %s\n\nEnvoyFilter:\n%s", rec.Preview, rec.EnvoyFilter)
	return nil
}

// WriteReport draws the sweep's plot and writes its report.html into its folder.
func WriteReport(sw *Sweep) error {
	spec, _ := stacks.Lookup(sw.Knob)
	var pts []report.SweepPoint
	for i, p := range sw.Points {
		if p.Status != analysis.StatusOK || p.Chance == nil {
			continue
		}
		pts = append(pts, report.SweepPoint{X: X(spec, p.Value, i), CV: p.CV, Lo: p.Chance.Lo, Median: p.Chance.Median, Hi: p.Chance.Hi, Cost: p.DrainsPerS})
	}
	sec := report.Section{Title: "Sweep of " + sw.Knob + " on " + sw.Scenario,
		Intro: []string{fmt.Sprintf("%s target: %d gateway pods x %d worker(s); %d run(s) per value, each with a %gs window (%s). Each value is a folder of its own with the files a suite scenario writes.",
			sw.Target, sw.Pods, sw.Concurrency, sw.Repeat, sw.WindowS, sw.Window)},
		Header: sw.header(), Rows: sw.rows()}
	if len(sw.Set) > 0 {
		sec.Notes = append(sec.Notes, "Held in every run: "+strings.Join(setText(sw.Set), ", ")+".")
	}
	for _, p := range sw.Points {
		if p.Bands != nil {
			sec.Notes = append(sec.Notes, p.Value+": "+p.Bands.Text()+".")
		}
	}
	if sw.Spread != nil {
		sec.Notes = append(sec.Notes, "Spread: "+sw.Spread.Text+".")
	}
	if rec := sw.Recommendation; rec != nil {
		sec.Notes = append(sec.Notes, "Rule: "+rec.Rule+".")
		if rec.Value == "" {
			sec.Notes = append(sec.Notes, "No recommendation: "+rec.Why+".")
		} else {
			sec.Notes = append(sec.Notes, "Recommendation: "+rec.Why+".", "Runs that agree: "+strings.Join(rec.Agree, "; ")+".")
			if rec.Holds != "" {
				sec.Notes = append(sec.Notes, "How often: "+rec.Holds+".")
			}
			sec.Blocks = []report.Block{{Heading: "Try it in the lab first", Text: rec.Preview}, {Heading: "EnvoyFilter", Text: rec.EnvoyFilter}}
			if rec.EnvoyFilter == "" {
				sec.Blocks = []report.Block{{Heading: "In the lab", Text: rec.Preview}}
			}
		}
	}
	if len(pts) > 0 {
		plot, err := report.SweepPlot(sw.Knob[strings.LastIndex(sw.Knob, ".")+1:], "drains per second (reconnect cost)", pts, sw.Threshold)
		if err != nil {
			return err
		}
		sec.Plots = []report.Plot{plot}
	}
	return report.WriteSection(sw.Dir, sec)
}

// setText is each held knob as path=value.
func setText(kv []stacks.KnobValue) []string {
	out := make([]string, len(kv))
	for i, k := range kv {
		out[i] = k.Path + "=" + k.Value
	}
	return out
}
