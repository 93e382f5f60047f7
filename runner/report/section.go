package report

import (
	"bytes"
	"html/template"
	"os"
	"path/filepath"

	"github.com/igwlab/igwlab/internal/atomicfile"
)

// Section is a report of its own for a command that is not a suite run (a sweep, a capacity
// search), in the suite report's look: paragraphs, a table, plots, and blocks of text to copy.
type Section struct {
	Title  string
	Intro  []string
	Header []string
	Rows   [][]string
	// Notes follow the table: the rule and the result, one paragraph each.
	Notes []string
	Plots []Plot
	// Blocks are preformatted, each under its heading (an EnvoyFilter, a command line).
	Blocks []Block
}

// Block is a preformatted text under a heading.
type Block struct{ Heading, Text string }

var sectionPage = template.Must(template.Must(template.New("section").Funcs(template.FuncMap{"dataURL": dataURL}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>igwlab: {{.Title}}</title>
{{template "style"}}</head>
<body>
<h1>{{.Title}}</h1>
{{range .Intro}}<p class="muted">{{.}}</p>
{{end}}
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{range .Notes}}<p>{{.}}</p>
{{end}}
{{range .Plots}}<figure><img src="{{dataURL .PNG}}" alt="{{.Title}}"><figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption></figure>
{{end}}
{{range .Blocks}}<h2>{{.Heading}}</h2>
<pre><code>{{.Text}}</code></pre>
{{end}}
</body></html>
`)).New("style").Parse(style)).Lookup("section")

// WriteSection draws the section's plots into dir/plots and writes dir/report.html.
func WriteSection(dir string, s Section) error {
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return err
	}
	for _, p := range s.Plots {
		if err := atomicfile.Write(filepath.Join(dir, "plots", p.Name), p.PNG); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := sectionPage.Execute(&b, s); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "report.html"), b.Bytes())
}
