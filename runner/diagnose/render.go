package diagnose

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// WriteText prints the report for a terminal.
func WriteText(w io.Writer, r *Report) {
	defer writeBaseline(w, r.Baseline)
	if r.SinceStart {
		up := ""
		if r.SpanS > 0 {
			up = fmt.Sprintf(", up to %.0fs", r.SpanS)
		}
		fmt.Fprintf(w, "diagnose: %s (counters since the Envoy started%s)\n", r.Source, up)
	} else {
		fmt.Fprintf(w, "diagnose: %s (window %.0fs)\n", r.Source, r.SpanS)
	}
	fmt.Fprintf(w, "VERDICT  %s\n         %s\n", strings.ToUpper(r.Verdict), r.Summary)
	if len(r.Pods) > 0 {
		fmt.Fprintf(w, "\n%-44s %6s %7s %7s %9s %8s %8s %8s %9s %6s\n", "pod", "seen", "opened", "active", "requests", "rps", "streams", "workers", "worker CV", "cpu")
		for _, p := range r.Pods {
			mark := ""
			if p.Name == r.HotPod && r.Verdict != AsChance {
				mark = "  <- hot"
			}
			cpu := "n/a"
			if p.CPUCores > 0 {
				cpu = fmt.Sprintf("%.2f", p.CPUCores)
			}
			fmt.Fprintf(w, "%-44s %6.0f %7.0f %7.0f %9.0f %8.1f %8.0f %8d %9.3f %6s%s\n", p.Name, p.Seen, p.Opened, p.Active,
				p.Requests, p.RPS, p.Streams, p.Workers, p.WorkerCV, cpu, mark)
		}
	}
	for _, p := range r.Pods {
		if len(p.WorkerConns) > 0 {
			fmt.Fprintf(w, "\nworkers      %s: connections each took: %s\n", p.Name, workerConnsText(p.WorkerConns))
		}
	}
	if r.Verdict == NotEnoughData && len(r.Pods) < 2 {
		writeNotes(w, r)
		return
	}
	perConn := fmt.Sprintf("; %.0f requests per connection; %.1f in flight per open connection", r.RequestsPerConn, r.StreamsPerConn)
	if r.LoadUnit == "connections" {
		perConn = " (a TCP proxy counts no requests)"
	}
	if r.SinceStart {
		fmt.Fprintf(w, "\nconnections  %d since the Envoy started, %d open now%s\n", int(r.Connections), int(r.ConnectionsActive), perConn)
	} else {
		fmt.Fprintf(w, "\nconnections  %d seen (%d opened in the window, %d open at its end, %d older than it)%s\n",
			int(r.Connections), int(r.ConnectionsOpened), int(r.ConnectionsActive), int(r.OlderThanWindow), perConn)
	}
	if r.ClosedLifetimeP50 > 0 {
		fmt.Fprintf(w, "             connections that closed had lived p50 %s, p99 %s (downstream_cx_length_ms)\n", ms(r.ClosedLifetimeP50), ms(r.ClosedLifetimeP99))
	}
	fmt.Fprintf(w, "rotation     %s\n", r.Rotation.Text)
	if f := r.InForce; f != nil {
		fmt.Fprintf(w, "in force     %s\n", inForceText(f))
		if len(f.Disagree) > 0 {
			fmt.Fprintf(w, "disagree     the pods of one gateway run different config, so one missed an update or a rollout is half done (on Istio, istioctl proxy-status shows which proxy is STALE):\n")
		}
		for _, d := range f.Disagree {
			fmt.Fprintf(w, "             %s\n", d)
		}
	}
	for _, y := range r.Young {
		fmt.Fprintf(w, "young pod    %s\n", y.Text)
	}
	for _, b := range r.Busy {
		fmt.Fprintf(w, "busy         %s\n", b)
	}
	if r.Client != "" {
		fmt.Fprintf(w, "clients      %s\n", r.Client)
	}
	if r.Streams != nil {
		fmt.Fprintf(w, "streams      %s\n", r.Streams.Text)
	}
	for _, c := range r.CPU {
		fmt.Fprintf(w, "cpu          %s\n", c)
	}
	if r.Loop != "" {
		fmt.Fprintf(w, "worker loop  %s\n", r.Loop)
	}
	for _, n := range r.NoEffect {
		fmt.Fprintf(w, "no effect    %s\n", n)
	}
	if l := r.Lever; l != nil {
		if l.Knob == "" {
			fmt.Fprintf(w, "lever        none at the gateway: %s\n", l.Why)
		} else {
			fmt.Fprintf(w, "lever        %s: %s\n             why: %s\n", l.Knob, l.Value, l.Why)
			if l.Cost != "" {
				fmt.Fprintf(w, "             cost: %s\n", l.Cost)
			}
			fmt.Fprintf(w, "             try it in the lab first: %s\n", l.Preview)
			if l.Envoy != "" {
				fmt.Fprintf(w, "             on this gateway: %s\n", l.Envoy)
			}
			if l.EnvoyFilter != "" {
				fmt.Fprintf(w, "             the EnvoyFilter that sets it:\n")
				for _, line := range strings.Split(strings.TrimRight(l.EnvoyFilter, "\n"), "\n") {
					fmt.Fprintf(w, "               %s\n", line)
				}
			}
		}
	}
	r.Fix.WriteText(w)
	writeNotes(w, r)
}

// workerConnsText lists each worker's connections and share ("worker_0 3169 (49%)").
func workerConnsText(counts []float64) string {
	total := sum(counts)
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("worker_%d %.0f (%.0f%%)", i, c, 100*c/math.Max(1, total))
	}
	return strings.Join(parts, ", ")
}

func writeNotes(w io.Writer, r *Report) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note         %s\n", n)
	}
}

func ms(v float64) string {
	if v >= 60000 {
		return fmt.Sprintf("%.1f min", v/60000)
	}
	if v >= 1000 {
		return fmt.Sprintf("%.1f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// HTML renders the report as one self-contained page: no scripts, fonts or images from
// anywhere; the bars are inline SVG.
func HTML(r *Report) ([]byte, error) {
	var text bytes.Buffer
	WriteText(&text, r)
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		R    *Report
		Bars template.HTML
		Text string
	}{r, bars(r), text.String()})
	return b.Bytes(), err
}

// bars draws each pod's requests as a horizontal bar, the hot pod in the alarm colour.
func bars(r *Report) template.HTML {
	var maxReq float64
	for _, p := range r.Pods {
		maxReq = math.Max(maxReq, p.Requests)
	}
	const rowH, width, label = 22, 720, 330
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="requests per pod">`, width, rowH*len(r.Pods)+4)
	for i, p := range r.Pods {
		wd := 0.0
		if maxReq > 0 {
			wd = (width - label - 80) * p.Requests / maxReq
		}
		fill := "#4a7bb7"
		if p.Name == r.HotPod && r.Verdict != AsChance {
			fill = "#c0392b"
		}
		y := i*rowH + 2
		fmt.Fprintf(&b, `<text x="0" y="%d" font-size="12">%s</text>`, y+14, template.HTMLEscapeString(p.Name))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, label, y, wd, rowH-6, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12">%.0f</text>`, float64(label)+wd+4, y+14, p.Requests)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped names
}

var page = template.Must(template.New("diagnose").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>igwlab diagnose: {{.R.Verdict}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}.verdict{font-size:1.2em;font-weight:bold}.bad{color:#c0392b}.good{color:#27ae60}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:.9em}
td.num{text-align:right}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:.85em}</style></head>
<body><h1>igwlab diagnose</h1>
<p>{{.R.Source}}, a window of {{printf "%.0f" .R.SpanS}} s. Read-only: no load was sent.</p>
<p class="verdict {{if eq .R.Verdict "spread as chance predicts"}}good{{else}}bad{{end}}">{{.R.Verdict}}</p>
<p>{{.R.Summary}}</p>
<h2>Requests per pod</h2>{{.Bars}}
<table><tr><th>pod</th><th>connections seen</th><th>opened</th><th>open at the end</th><th>requests</th><th>rps</th><th>in flight</th><th>workers</th><th>worker CV</th></tr>
{{range .R.Pods}}<tr><td>{{.Name}}</td><td class="num">{{printf "%.0f" .Seen}}</td><td class="num">{{printf "%.0f" .Opened}}</td><td class="num">{{printf "%.0f" .Active}}</td><td class="num">{{printf "%.0f" .Requests}}</td><td class="num">{{printf "%.1f" .RPS}}</td><td class="num">{{printf "%.0f" .Streams}}</td><td class="num">{{.Workers}}</td><td class="num">{{printf "%.3f" .WorkerCV}}</td></tr>
{{end}}</table>
<h2>Everything it found</h2><pre>{{.Text}}</pre>
</body></html>
`))

// writeBaseline prints what moved since the baseline.
func writeBaseline(w io.Writer, c *Change) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nSINCE %s\n         %s\n", c.File, c.Verdict)
	switch {
	case c.KnobsUnread:
		fmt.Fprintln(w, "knobs        /config_dump not read on both sides: the knobs in force are not compared")
	case len(c.Knobs) == 0:
		fmt.Fprintln(w, "knobs        the same in force")
	default:
		for _, k := range c.Knobs {
			fmt.Fprintf(w, "knob         %s\n", k)
		}
	}
	for _, m := range c.Rows {
		fmt.Fprintf(w, "%-12s %s: %.3g%s -> %.3g%s\n", "", m.What, m.Before, m.Unit, m.Now, m.Unit)
	}
	if c.Warning != "" {
		fmt.Fprintf(w, "WARNING      %s\n", c.Warning)
	}
}
