package cli

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/capacity"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/runner/sweep"
)

// TestDocsLinks: every relative link of the README and the guide (the generated reference
// included) reaches a file, and every #anchor a heading of its page, as GitHub names headings.
func TestDocsLinks(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string]map[string]bool{}
	pages := docPages(t, true)
	for _, p := range pages {
		anchors[p.path] = headingAnchors(p.text)
	}
	link := regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	var n int
	for _, p := range pages {
		_, prose := split(p.text)
		for i, line := range prose {
			for _, m := range link.FindAllStringSubmatch(stripInlineCode(line), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, anchor, _ := strings.Cut(target, "#")
				dest := p.path
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(p.path), file))
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: link %s: no %s", p.path, i+1, target, dest)
					continue
				}
				if anchor == "" {
					continue
				}
				if a, ok := anchors[dest]; !ok || !a[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", p.path, i+1, target, dest, anchor)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d relative links: is the extraction broken?", n)
	}
}

// stripInlineCode blanks code spans, whose brackets are not links.
func stripInlineCode(line string) string {
	return inlineCode.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
}

// headingAnchors names a page's headings as GitHub does: lower case, punctuation dropped,
// spaces as hyphens, a repeated name numbered.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	_, prose := split(text)
	keep := regexp.MustCompile(`[^\p{L}\p{M}\p{N}_ -]`)
	for _, l := range prose {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		a := strings.ReplaceAll(keep.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsPagesSayWhatTheyAreFor: every page of the guide opens with what it is for and a link
// back to the index, and the README stays short enough to read in five minutes.
func TestDocsPagesSayWhatTheyAreFor(t *testing.T) {
	for _, p := range docPages(t, false) {
		if p.path == "README.md" {
			if n := strings.Count(p.text, "\n"); n > 250 {
				t.Errorf("README.md has %d lines: at most 250, the rest belongs in the guide", n)
			}
			continue
		}
		lines := strings.Split(p.text, "\n")
		if !strings.HasPrefix(lines[0], "# ") || len(lines) < 3 || !strings.HasPrefix(lines[2], "What this page is for: ") {
			t.Errorf("%s does not open with its title and \"What this page is for: \"", p.path)
			continue
		}
		para := strings.Join(lines[2:slices.Index(append(lines[2:], ""), "")+2], " ")
		index := "(README.md)"
		if p.path == "docs/README.md" {
			index = "(../README.md)"
		}
		if !strings.Contains(para, index) {
			t.Errorf("%s: its opening paragraph does not link back to the index %s", p.path, index)
		}
	}
}

// outputBlocks are the fenced blocks that show output (no language, or text).
func outputBlocks(p docPage) []block {
	blocks, _ := split(p.text)
	var out []block
	for _, b := range blocks {
		if b.lang == "" || b.lang == "text" {
			out = append(out, b)
		}
	}
	return out
}

// evaluationLine is a call's first line in an evaluation block: its id, verdict and title.
var evaluationLine = regexp.MustCompile(`^(H-[A-Z]+|S\d+|WAYPOINT|HPA-blind)\b`)

// TestDocsEvaluationBlocks: every call line the docs show from a run names a call the suite
// makes, with the title it prints and a verdict it gives.
func TestDocsEvaluationBlocks(t *testing.T) {
	verdicts := []string{analysis.Pass, analysis.Confirmed, analysis.Partial, analysis.Refuted, analysis.Investigate,
		analysis.Inconclusive, analysis.Skipped, analysis.Negligible, analysis.Significant, analysis.Unexpected}
	ids := analysis.CheckIDs()
	slices.SortFunc(ids, func(a, b string) int { return len(b) - len(a) }) // "H-D upload" before "H-D"
	var n int
	for _, p := range docPages(t, false) {
		for _, b := range outputBlocks(p) {
			for i, l := range b.lines {
				if !evaluationLine.MatchString(l) {
					continue
				}
				n++
				where := p.path + ":" + strconv.Itoa(b.line+i)
				id := ""
				for _, c := range ids {
					if strings.HasPrefix(l, c+" ") {
						id = c
						break
					}
				}
				if id == "" {
					t.Errorf("%s: %q names no call the suite makes (%s)", where, l, strings.Join(analysis.CheckIDs(), ", "))
					continue
				}
				rest := strings.TrimSpace(strings.TrimPrefix(l, id))
				m := regexp.MustCompile(`^([A-Z]+)( \(\d+ of \d+ runs\))?\s+(.+)$`).FindStringSubmatch(rest)
				if m == nil || !slices.Contains(verdicts, m[1]) {
					t.Errorf("%s: %q: no verdict the suite gives (%s)", where, l, strings.Join(verdicts, ", "))
					continue
				}
				if title, _ := analysis.CheckTitle(id); m[3] != title {
					t.Errorf("%s: %s's title is %q, the docs say %q", where, id, title, m[3])
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d call lines in the docs' output blocks", n)
	}
}

// diagnoseLabels are the line labels diagnose's text report prints, read from a report that
// has every part.
func diagnoseLabels(t *testing.T) (labels map[string]bool, podHeader string) {
	t.Helper()
	band := analysis.Chance(10, 2)
	r := &diagnose.Report{Verdict: diagnose.BeyondChance, Summary: "s", Source: "src", SpanS: 30,
		Pods:     []diagnose.PodRow{{Name: "gw-a", Workers: 2, WorkerConns: []float64{1, 2}}},
		Chance:   band,
		Rotation: diagnose.Rotation{Text: "r"}, Busy: []string{"b"}, Client: "c", ClosedLifetimeP50: 1, ClosedLifetimeP99: 2,
		Young:   []diagnose.YoungPod{{Text: "y"}},
		Streams: &diagnose.StreamMix{Text: "s"}, CPU: []string{"c"}, NoEffect: []string{"n"},
		Lever:    &diagnose.Lever{Knob: "k", Value: "v", Why: "w", Cost: "c", Envoy: "e", EnvoyFilter: "f", Preview: "p"},
		InForce:  &diagnose.InForce{Pods: 1, Knobs: []stats.KnobInForce{{Path: "hcm.http2_protocol_options.max_concurrent_streams", Value: "1"}}, Disagree: []string{"d"}},
		Notes:    []string{"n"},
		LoadUnit: "requests",
	}
	var b strings.Builder
	diagnose.WriteText(&b, r)
	labels = map[string]bool{}
	for _, l := range strings.Split(b.String(), "\n") {
		if len(l) > 13 && l[0] != ' ' && strings.HasSuffix(l[:13], " ") {
			labels[strings.TrimSpace(l[:13])] = true
		}
		if strings.HasPrefix(l, "pod ") {
			podHeader = strings.Join(strings.Fields(l), " ")
		}
	}
	return labels, podHeader
}

// TestDocsDiagnoseOutput: every line of a diagnose report the docs show carries a label diagnose
// prints, its verdict is one diagnose gives, and its pod table has diagnose's columns.
func TestDocsDiagnoseOutput(t *testing.T) {
	labels, podHeader := diagnoseLabels(t)
	verdicts := []string{diagnose.BeyondChance, diagnose.FewConnections, diagnose.AsChance, diagnose.NotEnoughData}
	line := regexp.MustCompile(`^([a-z][a-z ]*[a-z]) +\S`)
	var n int
	for _, p := range docPages(t, false) {
		for _, b := range outputBlocks(p) {
			diag := slices.ContainsFunc(b.lines, func(l string) bool {
				return strings.HasPrefix(l, "VERDICT  ") || strings.HasPrefix(l, "diagnose: ") ||
					len(l) > 13 && l[0] != ' ' && labels[strings.TrimSpace(l[:13])] && strings.HasSuffix(l[:13], " ")
			})
			if !diag {
				continue
			}
			for i, l := range b.lines {
				where := p.path + ":" + strconv.Itoa(b.line+i)
				switch {
				case strings.HasPrefix(l, "VERDICT  "):
					n++
					v := strings.TrimSpace(strings.TrimPrefix(l, "VERDICT"))
					if !slices.ContainsFunc(verdicts, func(x string) bool { return strings.ToUpper(x) == v }) {
						t.Errorf("%s: verdict %q is none diagnose gives", where, v)
					}
				case strings.HasPrefix(l, "pod "):
					if got := strings.Join(strings.Fields(l), " "); got != podHeader {
						t.Errorf("%s: pod table header %q, diagnose prints %q", where, got, podHeader)
					}
				case len(l) > 13 && l[0] != ' ' && l[12] == ' ' && line.MatchString(l[:13]+"x"):
					n++
					if label := strings.TrimSpace(l[:13]); !labels[label] {
						t.Errorf("%s: %q is no line diagnose prints (its labels: %v)", where, label, keys(labels))
					}
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d diagnose lines in the docs", n)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDocsTables: every sweep and capacity table the docs show has the columns the commands
// print.
func TestDocsTables(t *testing.T) {
	var sweeps [][]string
	for _, tls := range []bool{false, true} {
		for _, over := range []bool{false, true} {
			for _, cpu := range []bool{false, true} {
				sweeps = append(sweeps, sweep.Columns(tls, over, cpu))
			}
		}
	}
	cols := regexp.MustCompile(`\s{2,}`)
	var n int
	for _, p := range docPages(t, false) {
		for _, b := range outputBlocks(p) {
			for i, l := range b.lines {
				where := p.path + ":" + strconv.Itoa(b.line+i)
				got := cols.Split(strings.TrimSpace(l), -1)
				switch {
				case strings.HasPrefix(l, "value  CV  "):
					n++
					if !slices.ContainsFunc(sweeps, func(c []string) bool { return slices.Equal(c, got) }) {
						t.Errorf("%s: sweep table columns %q are none igwlab sweep prints", where, got)
					}
				case strings.HasPrefix(l, "curve  "):
					n++
					i := slices.IndexFunc(got, func(c string) bool { return strings.HasPrefix(c, "meets ") })
					if i < 0 {
						t.Errorf("%s: capacity table without its SLO column: %q", where, got)
						continue
					}
					pct, limit, _ := strings.Cut(strings.TrimPrefix(got[i], "meets "), " <= ")
					slo, err := capacity.ParseSLO(pct + "=" + strings.ReplaceAll(limit, " ", ""))
					if err != nil || !slices.Equal(capacity.Columns(slo), got) {
						t.Errorf("%s: capacity table columns %q; igwlab capacity prints %q (%v)", where, got, capacity.Columns(slo), err)
					}
				}
			}
		}
	}
	if n < 3 {
		t.Errorf("found only %d sweep and capacity tables in the docs", n)
	}
}
