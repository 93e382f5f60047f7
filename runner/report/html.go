package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// style is the report's look, shared by every page igwlab writes.
const style = `<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;width:100%;font-size:13px} th,td{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f6f6f6} td.num{text-align:right;font-variant-numeric:tabular-nums}
.good{color:#17753a;font-weight:600} .bad{color:#b3261e;font-weight:600} .neutral{color:#555;font-weight:600}
figure{margin:1.2em 0} figure img{max-width:100%;border:1px solid #eee} figcaption{color:#555;font-size:13px}
.muted{color:#666} code{background:#f4f4f4;padding:0 3px}
</style>`

var page = template.Must(template.Must(template.New("report").Funcs(template.FuncMap{
	"f3": func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"f1": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"n":  func(v float64) string { return fmt.Sprintf("%d", int64(math.Round(v))) },
	"ratio": func(v *float64) string {
		if v == nil || math.IsInf(*v, 0) || math.IsNaN(*v) {
			return ""
		}
		return fmt.Sprintf("%.2f", *v)
	},
	"b64": dataURL,
	"verdictClass": func(v string) string {
		switch v {
		case analysis.Pass, analysis.Confirmed, analysis.Negligible:
			return "good"
		case analysis.Refuted, analysis.Investigate, analysis.Unexpected, analysis.Significant:
			return "bad"
		}
		return "neutral"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>igwlab report: {{.Run.Target}} target</title>
{{template "style"}}</head>
<body>
<h1>Thread concentration on the ingress gateway</h1>
<p class="muted">{{.Run.Target}} target: {{.Run.Pods}} gateway pods x {{.Run.Concurrency}} worker(s).{{if .Run.InForce}} In force: {{.Run.InForce}}.{{end}}
A few long-lived HTTP/2 connections put all their streams on a few Envoy workers; this run measures how the lab's knobs change that for each kind of client.</p>

<h2>Hypothesis evaluation</h2>
<table><tr><th>call</th><th>verdict</th><th>ratio</th><th>the numbers behind it</th></tr>
{{range .Run.Evaluation}}<tr><td><b>{{.ID}}</b><br><span class="muted">{{.Title}}</span></td>
<td class="{{verdictClass .Verdict}}">{{.Verdict}}{{if .Confidence}}<br><span class="muted">{{.Confidence}}</span>{{end}}</td>
<td class="num">{{ratio .Ratio}}{{if .RatioName}}<br><span class="muted">{{.RatioName}}</span>{{end}}</td><td>{{.Detail}}{{if .Disturbed}}<br><span class="bad">DISTURBED</span>: a fault hit {{range $i, $n := .Disturbed}}{{if $i}}, {{end}}{{$n}}{{end}} while it ran; rerun before trusting this call{{end}}</td></tr>
{{end}}</table>

<h2>Plots</h2>
{{range .Plots}}<figure><img src="{{b64 .PNG}}" alt="{{.Title}}"><figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption></figure>
{{end}}

<h2>Scenarios</h2>
<table><tr><th>scenario</th><th>client</th><th class="num">connections</th><th class="num">CV</th><th>against chance</th>
<th class="num">rps</th><th class="num">p99 ms</th><th class="num">busiest worker</th><th class="num">drained</th><th>knobs set</th></tr>
{{range .Rows}}<tr><td><b>{{.Name}}</b>{{if .Disturbed}}<br><span class="bad">disturbed</span>{{end}}</td><td>{{.Client}}</td>
{{if .OK}}<td class="num">{{n .ConnectionsTotal}}</td><td class="num">{{f3 .CV}}</td><td>{{.ChanceVerdict}}</td>
<td class="num">{{f1 .RPS}}</td><td class="num">{{f1 .P99Ms}}</td><td class="num">{{.BusyText}}</td><td class="num">{{n .GoAways}}</td>
{{else}}<td colspan="7" class="muted">{{.Status}}: {{.Reason}}</td>{{end}}
<td>{{range .Knobs}}<code>{{.}}</code> {{end}}</td></tr>
{{end}}</table>

{{range .Rows}}{{if or .Faults .Warnings}}<p><b>{{.Name}}</b>{{range .Faults}}<br><span class="bad">fault</span> {{.}}{{end}}{{range .Warnings}}<br><span class="neutral">warning</span> {{.}}{{end}}</p>
{{end}}{{end}}
<h2>What each scenario teaches</h2>
{{range .Rows}}{{if .Teaches}}<p><b>{{.Name}}</b>: {{.Teaches}}{{if .Why}} <span class="muted">Local departure: {{.Why}}</span>{{end}}</p>{{end}}
{{end}}
<script>
// Marks the page once every image has decoded, so a headless browser can tell it rendered.
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute("data-images", imgs.length + "/" + ok);
});
</script>
</body></html>
`)).New("style").Parse(style)).Lookup("report")

type row struct {
	*analysis.Result
	Teaches, Why string
	Knobs        []string
}

// HTML renders the report: evaluation, plots (inline), scenario table, teachings. It needs no
// network and no other file.
func HTML(r *Run, plots []Plot) ([]byte, error) {
	var rows []row
	for _, n := range r.Order {
		s := r.Scenarios[n]
		if s == nil {
			continue
		}
		rw := row{Result: s, Teaches: r.Teaches[n], Why: strings.TrimSpace(r.Why[n])}
		for _, k := range s.Knobs {
			if spec, ok := stacks.Lookup(k.Path); ok && k.Value != spec.Default {
				rw.Knobs = append(rw.Knobs, k.Path[strings.LastIndex(k.Path, ".")+1:]+"="+k.Value)
			}
		}
		rows = append(rows, rw)
	}
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		Run   *Run
		Plots []Plot
		Rows  []row
	}{r, plots, rows})
	return b.Bytes(), err
}

// dataURL inlines a PNG, so that a report needs no other file.
func dataURL(b []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
}
