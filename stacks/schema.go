package stacks

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FieldError is one problem in a scenario file, located by file, line and field path.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
}

// checkShape walks a YAML node against the Go type the file decodes into, so that an unknown
// or misspelt key, or a value of the wrong kind, is reported with its path and line before any
// decoding happens. yaml.v3's own errors name Go types, which mean nothing to a user.
func checkShape(file string, n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	bad := func(msg string) {
		*errs = append(*errs, &FieldError{File: file, Line: n.Line, Field: path, Msg: msg})
	}
	if n.Tag == "!!null" {
		return
	}
	switch {
	case t == reflect.TypeOf(Duration(0)):
		if spec, ok := knobAt(path); ok && n.Kind == yaml.ScalarNode {
			if err := spec.Set(&Knobs{}, n.Value); err != nil {
				bad(err.Error())
			}
			return
		}
		if n.Kind != yaml.ScalarNode {
			bad("want a duration such as 10s or 250ms")
		} else if _, err := ParseDuration(n.Value); err != nil {
			bad(err.Error())
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad(fmt.Sprintf("want a mapping with keys %s", strings.Join(structKeys(t), ", ")))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := joinPath(path, k.Value)
			if seen[k.Value] {
				*errs = append(*errs, &FieldError{File: file, Line: k.Line, Field: sub, Msg: "duplicate key"})
				continue
			}
			seen[k.Value] = true
			f, ok := structField(t, k.Value)
			if !ok {
				msg := "unknown field"
				if s := suggest(k.Value, structKeys(t)); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				msg += fmt.Sprintf(" (allowed: %s)", strings.Join(structKeys(t), ", "))
				*errs = append(*errs, &FieldError{File: file, Line: k.Line, Field: sub, Msg: msg})
				continue
			}
			checkShape(file, v, f.Type, sub, errs)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of names to values")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkShape(file, n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value), errs)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("want a list")
			return
		}
		for i, c := range n.Content {
			checkShape(file, c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			bad(fmt.Sprintf("want a single %s value", kindName(t)))
			return
		}
		if spec, ok := knobAt(path); ok {
			// Knobs are checked against Envoy's range for that field, not the Go type's.
			if err := spec.Set(&Knobs{}, n.Value); err != nil {
				bad(err.Error())
			}
			return
		}
		checkScalar(n, t, bad)
	}
}

// knobAt returns the knob spec for a field path such as knobs.hcm.drain_timeout.
func knobAt(path string) (KnobSpec, bool) {
	for _, prefix := range []string{"knobs.", "local.knobs."} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			return Lookup(rest)
		}
	}
	return KnobSpec{}, false
}

func checkScalar(n *yaml.Node, t reflect.Type, bad func(string)) {
	switch t.Kind() {
	case reflect.Bool:
		if _, err := strconv.ParseBool(n.Value); err != nil || n.Tag != "!!bool" {
			bad(fmt.Sprintf("%q is not true or false", n.Value))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, err := strconv.ParseInt(n.Value, 0, 64); err != nil || n.Tag != "!!int" {
			bad(fmt.Sprintf("%q is not a whole number", n.Value))
		}
	case reflect.Uint32, reflect.Uint64, reflect.Uint:
		if n.Tag != "!!int" {
			bad(fmt.Sprintf("%q is not a whole number", n.Value))
		} else if v, err := strconv.ParseInt(n.Value, 0, 64); err != nil || v < 0 || uint64(v) > 1<<32-1 {
			bad(fmt.Sprintf("%s is out of range for an unsigned 32-bit value (0..4294967295)", n.Value))
		}
	case reflect.Float64:
		if _, err := strconv.ParseFloat(n.Value, 64); err != nil || (n.Tag != "!!int" && n.Tag != "!!float") {
			bad(fmt.Sprintf("%q is not a number", n.Value))
		}
	case reflect.String:
		if n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float" {
			bad(fmt.Sprintf("%q is not text", n.Value))
		}
	}
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true/false"
	case reflect.String:
		return "text"
	default:
		return "number"
	}
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func structField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name := yamlName(f); name != "" && name != "-" && name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func structKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if name := yamlName(t.Field(i)); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// suggest returns the candidate closest to s when it is close enough to be a typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lineOf finds the line of the value at a dotted path in a document, or 0.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				n, line, found = n.Content[i+1], n.Content[i].Line, true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
