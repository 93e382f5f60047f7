package stacks

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParseFile feeds arbitrary files to the loader. It must never panic or hang. A file it
// rejects must be rejected with errors that name the file and, below the file level, the
// field; a file it accepts must hold only values the loader itself would accept again:
// every knob within its KnobSpec range, on the lab and on the local target, and the scenario
// written back out as YAML must load to the same scenario.
//
// Seeds: every built-in scenario, every file of the bad-input corpus, and the committed
// entries under testdata/fuzz/FuzzParseFile (regressions and hand-written edge cases).
func FuzzParseFile(f *testing.F) {
	builtins, _ := fs.Glob(builtin, "*.yaml")
	for _, b := range builtins {
		data, _ := fs.ReadFile(builtin, b)
		f.Add(b, data)
	}
	_ = filepath.WalkDir(badDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			data, _ := os.ReadFile(p)
			f.Add(d.Name(), data)
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, file string, data []byte) {
		s, err := ParseFile(file, data)
		if err != nil {
			checkRejection(t, file, err)
			return
		}
		checkAccepted(t, file, s)
	})
}

// fileLevel are the messages of problems that belong to the whole file, not to one field.
var fileLevel = []string{"file is empty", "file is", "not valid YAML", "file holds no YAML document",
	"a scenario file holds one YAML document", "want a mapping with keys"}

func checkRejection(t *testing.T, file string, err error) {
	t.Helper()
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		leaves = append(leaves, e)
	}
	walk(err)
	for _, e := range leaves {
		var fe *FieldError
		if !errors.As(e, &fe) {
			if strings.HasPrefix(e.Error(), "... and ") {
				continue // the cap on the number of problems reported
			}
			t.Fatalf("error is not located in the file: %v", e)
		}
		if fe.File != file {
			t.Fatalf("error names file %q, want %q: %v", fe.File, file, e)
		}
		if fe.Field == "" && !hasAnyPrefix(fe.Msg, fileLevel) {
			t.Fatalf("error names no field: %v", e)
		}
		// yaml.v3's own decoding errors speak of Go types; the shape check must catch every
		// such value first, with its field.
		if strings.Contains(fe.Msg, "unmarshal") || strings.Contains(fe.Msg, "cannot decode") {
			t.Fatalf("the decoder, not the shape check, rejected the file: %v", e)
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func checkAccepted(t *testing.T, file string, s *Scenario) {
	t.Helper()
	if s.File != file || s.Name != strings.TrimSuffix(path.Base(file), ".yaml") {
		t.Fatalf("accepted %q as scenario %q", file, s.Name)
	}
	for target, eff := range map[string]Scenario{"lab": s.Lab(), "with local departures": s.WithLocal()} {
		for _, spec := range Registry {
			if err := spec.Check(&eff.Knobs); err != nil {
				t.Fatalf("%s target: knob %s: %v", target, spec.Path, err)
			}
		}
		if c := eff.Client.Concurrency; c < 1 || c > 20000 {
			t.Fatalf("%s target: concurrency %d", target, c)
		}
		if q := eff.Client.QPS; math.IsNaN(q) || q < 0 || q > maxQPS {
			t.Fatalf("%s target: qps %v", target, q)
		}
		if d := eff.Load.Duration.D(); d <= 0 {
			t.Fatalf("%s target: duration %s", target, eff.Load.Duration)
		}
	}
	_ = s.Departures()
	// Written out and read back, the scenario is the same: compared as YAML, which does not
	// tell an empty map from an absent one.
	out := marshalQuoted(t, s)
	again, err := ParseFile(file, out)
	if err != nil {
		t.Fatalf("the accepted scenario, written out, is rejected: %v\n%s", err, out)
	}
	if out2 := marshalQuoted(t, again); string(out) != string(out2) {
		t.Fatalf("round trip changed the scenario:\n%s\n---\n%s", out, out2)
	}
}

// marshalQuoted writes s as YAML with every string double-quoted: yaml.v3's block styles do
// not round-trip every string (a leading blank line in a folded block is lost), which is the
// library's quirk, not the loader's.
func marshalQuoted(t *testing.T, s *Scenario) []byte {
	t.Helper()
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		t.Fatalf("encode: %v", err)
	}
	var quote func(*yaml.Node)
	quote = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			n.Style = yaml.DoubleQuotedStyle
		}
		for _, c := range n.Content {
			quote(c)
		}
	}
	quote(&n)
	out, err := yaml.Marshal(&n)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return out
}
