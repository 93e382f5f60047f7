package conformance

import (
	"fmt"
	"os"
	"strings"
)

// The h2spec table of docs/envoy-conformance.md: one row per case, Envoy 1.35's answer under
// its default codec (oghttp2) and, where it differs, under nghttp2, with the source that fixes
// it. Everything but the source is written by the conformance tier's -update from what the
// emulator does; the tier fails when the emulator does anything else.

// Row is one case's row.
type Row struct {
	Case     string
	Sends    string // oghttp2: the frames after the handshake, then who closes
	Counters string
	H2spec   string // pass, skip, or "fail: <Actual>"
	// Under nghttp2, where it differs ("" where it is the same).
	NgSends, NgCounters, NgH2spec string
	Source                        string
}

// pattern reports whether the row uses the table's wildcards: such a row is written by hand.
func (r Row) pattern() bool {
	for _, c := range []string{r.Sends, r.Counters, r.NgSends, r.NgCounters} {
		if strings.ContainsAny(c, "…*") || strings.Contains(c, "+?") {
			return true
		}
	}
	return false
}

// Answer3 is a case's answer under one codec.
type Answer3 struct{ Sends, Counters, H2spec string }

// For returns the row's answer under a codec.
func (r Row) For(nghttp2 bool) Answer3 {
	a := Answer3{r.Sends, r.Counters, r.H2spec}
	if nghttp2 {
		if r.NgSends != "" {
			a.Sends = r.NgSends
		}
		if r.NgCounters != "" {
			a.Counters = r.NgCounters
		}
		if r.NgH2spec != "" {
			a.H2spec = r.NgH2spec
		}
	}
	return a
}

// Table markers in the document.
const (
	tableStart = "<!-- h2spec table: begin -->"
	tableEnd   = "<!-- h2spec table: end -->"
)

var tableHeader = "| case | Envoy 1.35 (oghttp2) sends | counters | h2spec | nghttp2 sends, where it differs | nghttp2 counters | nghttp2 h2spec | source |\n" +
	"|---|---|---|---|---|---|---|---|\n"

// ReadTable reads the table from the document at path.
func ReadTable(path string) (map[string]Row, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	doc := string(b)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		return nil, nil, fmt.Errorf("%s: no h2spec table between %q and %q", path, tableStart, tableEnd)
	}
	rows := map[string]Row{}
	var order []string
	for _, line := range strings.Split(doc[i+len(tableStart):j], "\n") {
		cells := splitRow(line)
		if len(cells) != 8 || cells[0] == "case" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		r := Row{Case: unquote(cells[0]), Sends: unquote(cells[1]), Counters: unquote(cells[2]), H2spec: unquote(cells[3]),
			NgSends: unquote(cells[4]), NgCounters: unquote(cells[5]), NgH2spec: unquote(cells[6]), Source: cells[7]}
		rows[r.Case] = r
		order = append(order, r.Case)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: the h2spec table has no row", path)
	}
	return rows, order, nil
}

// WriteTable replaces the table in the document at path.
func WriteTable(path string, rows []Row) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no h2spec table between %q and %q", path, tableStart, tableEnd)
	}
	var t strings.Builder
	t.WriteString(tableStart + "\n\n" + tableHeader)
	for _, r := range rows {
		cells := []string{quote(r.Case), quote(r.Sends), quote(r.Counters), quote(r.H2spec),
			quote(r.NgSends), quote(r.NgCounters), quote(r.NgH2spec), r.Source}
		t.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	t.WriteString("\n")
	return os.WriteFile(path, []byte(doc[:i]+t.String()+doc[j:]), 0o644)
}

// splitRow splits a Markdown table row on the pipes that are not inside backquotes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	var cells []string
	var cur strings.Builder
	inCode := false
	for _, r := range line[1 : len(line)-1] {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// quote writes a cell's text as code, so that Markdown leaves it alone.
func quote(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func unquote(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "`"), "`") }

// A few answers are not one sequence: where Envoy's own answer depends on how the client's
// writes fall into reads (which earlier streams' responses go out before a later frame is
// read), the table writes "…" after a frame that may come any number of times, "*" for a word
// that may be anything, and "+?" for a counter that may move by any amount.

// MatchSends reports whether what the gateway sent matches the table's cell.
func MatchSends(got, want string) bool {
	if !strings.ContainsAny(want, "…*") {
		return got == want
	}
	return matchTokens(strings.Split(got, ", "), strings.Split(want, ", "))
}

func matchTokens(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	w := want[0]
	if strings.HasSuffix(w, "…") {
		pat := strings.TrimSuffix(w, "…")
		for i := 0; ; i++ { // the repeated frame may come i times
			if matchTokens(got[i:], want[1:]) {
				return true
			}
			if i >= len(got) || !matchToken(got[i], pat) {
				return false
			}
		}
	}
	return len(got) > 0 && matchToken(got[0], w) && matchTokens(got[1:], want[1:])
}

func matchToken(got, pat string) bool {
	g, p := strings.Fields(got), strings.Fields(pat)
	if len(g) != len(p) {
		return false
	}
	for i := range p {
		if p[i] != "*" && p[i] != g[i] {
			return false
		}
	}
	return true
}

// MatchCounters reports whether counter moves match the table's cell.
// MatchVerdict reports whether h2spec's verdict is the table's, or one of its alternatives
// ("fail: A or fail: B"): where Envoy's answer depends on how the client's bytes split into
// reads, the table lists each.
func MatchVerdict(got, want string) bool {
	for _, alt := range strings.Split(want, " or ") {
		if got == alt {
			return true
		}
	}
	return false
}

func MatchCounters(got map[string]int64, want string) bool {
	if !strings.Contains(want, "+?") {
		return FormatCounters(got) == want
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(want, ", ") {
		if name, ok := strings.CutSuffix(part, "+?"); ok {
			seen[name] = true
			continue
		}
		i := strings.LastIndexAny(part, "+-")
		if i < 0 || fmt.Sprintf("%s%+d", part[:i], got[part[:i]]) != part {
			return false
		}
		seen[part[:i]] = true
	}
	for name, d := range got {
		if d != 0 && !seen[name] {
			return false
		}
	}
	return true
}
