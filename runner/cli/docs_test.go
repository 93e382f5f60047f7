package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/cli/app"
)

// The README and the guide under docs/ are tested like code: the command lines in them run on
// the real command tree and Makefile, their links resolve, and their sample outputs are what the
// code prints (docs_output_test.go). A renamed flag, a dead link or a stale page fails here.

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// docPage is one Markdown file of the docs, by its path from the repository's root.
type docPage struct {
	path string
	text string
}

// docPages are the README and every page of the guide; generated reference pages with
// generated, whose command lines are cobra's usage lines.
func docPages(t *testing.T, generated bool) []docPage {
	t.Helper()
	root := repoRoot(t)
	var out []docPage
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && rel == filepath.Join("docs", "cli") && !generated {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, docPage{filepath.ToSlash(rel), string(b)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]docPage{{"README.md", string(b)}}, out...)
}

// block is a fenced code block: its language ("" for output) and its lines.
type block struct {
	lang  string
	line  int // the line of its first content line
	lines []string
}

// split separates a page into its fenced blocks and its prose (the lines outside them, blank
// where a block was, so line numbers hold).
func split(text string) (blocks []block, prose []string) {
	var cur *block
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 2}
			prose = append(prose, "")
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
			prose = append(prose, "")
		case cur != nil:
			cur.lines = append(cur.lines, l)
			prose = append(prose, "")
		default:
			prose = append(prose, l)
		}
	}
	return blocks, prose
}

// docCommand is a command line found in a page.
type docCommand struct {
	where string // file:line
	words []string
	// inline is a code span in prose, which may name a command or a flag without the values
	// a whole command line needs (`igwlab knobs --from`).
	inline bool
}

var shellLangs = []string{"sh", "bash", "shell", "console"}

// commands finds every igwlab, igwlab-lab and make command line in a page: each line of a
// shell block (continuations joined, comments dropped, pipelines and lists split), and each
// inline code span of the prose that starts with one of them.
func commands(p docPage) []docCommand {
	blocks, prose := split(p.text)
	var out []docCommand
	for _, b := range blocks {
		if !slices.Contains(shellLangs, b.lang) {
			continue
		}
		for i := 0; i < len(b.lines); i++ {
			start, line := i, strings.TrimSpace(b.lines[i])
			for strings.HasSuffix(line, "\\") && i+1 < len(b.lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(b.lines[i])
			}
			line = strings.TrimPrefix(line, "$ ")
			for _, seg := range shellSegments(line) {
				if words := commandWords(seg); words != nil {
					out = append(out, docCommand{fmt.Sprintf("%s:%d", p.path, b.line+start), words, false})
				}
			}
		}
	}
	// Inline spans may wrap across lines of a paragraph.
	text := strings.Join(prose, "\n")
	for _, m := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		line := strings.Count(text[:m[0]], "\n") + 1
		for _, seg := range shellSegments(span) {
			if words := commandWords(seg); words != nil {
				out = append(out, docCommand{fmt.Sprintf("%s:%d", p.path, line), words, true})
			}
		}
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	envAssign  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
)

// programs are the command names a docs line runs igwlab by.
var programs = map[string]string{
	"igwlab": "igwlab", "./bin/igwlab": "igwlab", "bin/igwlab": "igwlab",
	"igwlab-lab": "igwlab", "./bin/igwlab-lab": "igwlab", "bin/igwlab-lab": "igwlab",
	"make": "make",
}

// commandWords returns a segment's words from its program on (the program normalised to
// "igwlab" or "make"), or nil for a segment that runs neither. Leading variable assignments
// are skipped; words from "..." on are an elision and dropped.
func commandWords(words []string) []string {
	for len(words) > 0 && (words[0] == "time" || envAssign.MatchString(words[0])) {
		words = words[1:]
	}
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./runner/cmd/igwlab" {
		words = append([]string{"igwlab"}, words[3:]...)
	}
	if len(words) == 0 {
		return nil
	}
	prog, ok := programs[words[0]]
	if !ok {
		return nil
	}
	out := []string{prog}
	for _, w := range words[1:] {
		if w == "..." || w == "[flags]" {
			break
		}
		out = append(out, w)
	}
	if prog == "make" && len(out) == 1 {
		return nil // "make" alone names the tool, not a command line
	}
	return out
}

// shellSegments splits a shell line into the words of each simple command: quotes and $(...)
// keep their words whole, |, ||, &&, ; and & end a command, # starts a comment, and
// redirections are dropped with their target.
func shellSegments(line string) [][]string {
	var segs [][]string
	var words []string
	var w strings.Builder
	inWord, quote, depth := false, byte(0), 0
	flush := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	end := func() {
		flush()
		if len(words) > 0 {
			segs = append(segs, dropRedirections(words))
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case depth > 0:
			w.WriteByte(c)
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			w.WriteString("$(")
			i++
			depth, inWord = 1, true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			end()
			return segs
		case c == '|' || c == ';' || c == '&':
			end()
			if i+1 < len(line) && (line[i+1] == '|' || line[i+1] == '&') {
				i++
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return segs
}

func dropRedirections(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == ">" || w == ">>" || w == "<" || w == "2>" || w == "2>&1" {
			i++
			continue
		}
		if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "<") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// placeholder reports a value the docs write in place of the user's own: FILE, URL,URL,...,
// <pod>, a shell substitution.
func placeholder(v string) bool {
	return regexp.MustCompile(`^[A-Z][A-Z0-9_]*([,.:/=|-][A-Z0-9_.]*)*$`).MatchString(v) ||
		strings.ContainsAny(v, "<>$") || strings.Contains(v, "...")
}

// sampleValue stands for a placeholder in a flag of the given type.
func sampleValue(typ string) (string, bool) {
	switch typ {
	case "int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64":
		return "1", true
	case "duration":
		return "1s", true
	case "bool":
		return "true", true
	case "string", "stringSlice", "stringArray":
		return "x", true
	}
	return "", false
}

// checkIgwlab runs a docs command line through a fresh command tree's own parsing: the command
// exists, every flag exists, every value parses (a placeholder by its flag's type), and the
// positional arguments are what the command takes. The command is not run.
func checkIgwlab(words []string, inline bool) error {
	root := Tree(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	args := app.Normalize(root, words[1:])
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	flags := cmd.Flags()
	flags.AddFlagSet(cmd.InheritedFlags())
	var parse []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			parse = append(parse, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookup(flags, name, strings.HasPrefix(a, "--"))
		if f == nil {
			return fmt.Errorf("%s has no flag %s", cmd.CommandPath(), a)
		}
		if !hasValue && f.NoOptDefVal == "" {
			if i+1 >= len(rest) {
				if inline {
					break // prose naming the flag
				}
				return fmt.Errorf("%s %s: no value", cmd.CommandPath(), a)
			}
			i++
			value, hasValue = rest[i], true
		}
		if hasValue && placeholder(value) {
			v, ok := sampleValue(f.Value.Type())
			if !ok {
				continue // a custom value the docs leave to the reader: the flag exists
			}
			value = v
		}
		if hasValue {
			parse = append(parse, "--"+f.Name+"="+value)
		} else {
			parse = append(parse, "--"+f.Name)
		}
	}
	if err := cmd.ParseFlags(parse); err != nil {
		var nf *fs.PathError
		if errors.As(err, &nf) || strings.Contains(err.Error(), "no such file") {
			return nil // the docs name a file of the reader's (an EnvoyFilter, a catalog folder)
		}
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if args := cmd.Flags().Args(); !inline || len(args) > 0 {
		if err := cmd.ValidateArgs(args); err != nil {
			return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
		}
	}
	return nil
}

func lookup(fs *pflag.FlagSet, name string, long bool) *pflag.Flag {
	if long || len(name) > 1 {
		return fs.Lookup(name)
	}
	return fs.ShorthandLookup(name)
}

// makefile reads the Makefile's targets and the variables it uses.
func makefile(t *testing.T) (targets, vars map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets, vars = map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+):([^=]|$)`).FindAllStringSubmatch(string(b), -1) {
		targets[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)|(?m)^([A-Z_][A-Z0-9_]*) *\?=`).FindAllStringSubmatch(string(b), -1) {
		vars[m[1]+m[2]] = true
	}
	return targets, vars
}

func checkMake(words []string, targets, vars map[string]bool) error {
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-C" || w == "-f" || w == "-j":
			i++
		case strings.HasPrefix(w, "-"):
		case strings.Contains(w, "="):
			if name, _, _ := strings.Cut(w, "="); !vars[name] {
				return fmt.Errorf("the Makefile uses no variable %s", name)
			}
		case !targets[w]:
			return fmt.Errorf("the Makefile has no target %q", w)
		}
	}
	return nil
}

// TestDocsCommandLines: every igwlab, igwlab-lab and make command line in the README and the
// guide runs as written on the real command tree and Makefile, up to parsing.
func TestDocsCommandLines(t *testing.T) {
	targets, vars := makefile(t)
	var n int
	for _, p := range docPages(t, false) {
		for _, c := range commands(p) {
			n++
			var err error
			if c.words[0] == "make" {
				err = checkMake(c.words, targets, vars)
			} else {
				err = checkIgwlab(c.words, c.inline)
			}
			if err != nil {
				t.Errorf("%s: %s: %v", c.where, strings.Join(c.words, " "), err)
			}
		}
	}
	if n < 100 {
		t.Errorf("found only %d command lines in the docs: is the extraction broken?", n)
	}
}

// The checker itself: a renamed flag, a value that does not parse, a command or a make target
// that does not exist are each caught; placeholders and shell around the command are not.
func TestDocsCommandChecker(t *testing.T) {
	targets, vars := makefile(t)
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"./bin/igwlab suite --only 02-trigger,04-mrpc --repeat 3", true},
		{"./bin/igwlab suite --only 02-trigger --repeats 3", false},
		{"./bin/igwlab suite --repeat three", false},
		{"igwlab sweep --scenario 04-fortio --knob hcm.common_http_protocol_options.max_requests_per_connection --values 30,100", true},
		{"igwlab sweep --scenario 04-fortio --set hcm.http2_protocol_options.max_concurent_streams=5", false},
		{"igwlab diagnose --admin URL,URL,... --duration 30s", true},
		{"igwlab diagnose --timeout N", true},
		{"igwlab report \"results/$(ls results | tail -n 1)\"", true},
		{"igwlab frobnicate", false},
		{"igwlab-lab up --scenario 03-mcs-cap", true},
		{"igwlab suite -q -json --only 02-trigger", true},
		{"make test-h2spec FUZZRUNS=100x", true},
		{"make test-everything", false},
		{"make run NOSUCHVAR=1", false},
		{"time ./bin/igwlab suite --target local 2>/dev/null | tail -3", true},
	} {
		var err error
		found := false
		for _, seg := range shellSegments(c.line) {
			words := commandWords(seg)
			if words == nil {
				continue
			}
			found = true
			if words[0] == "make" {
				err = checkMake(words, targets, vars)
			} else {
				err = checkIgwlab(words, false)
			}
		}
		if !found || (err == nil) != c.ok {
			t.Errorf("%q: found %v, error %v, want ok=%v", c.line, found, err, c.ok)
		}
	}
}
