package stacks

import (
	"fmt"
	"math"
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
		if r := allowedRange(path); r != "" && !strings.Contains(msg, "allowed") {
			msg += " (allowed " + r + ")"
		}
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
	case t == reflect.TypeOf(CPU(0)):
		if n.Kind != yaml.ScalarNode {
			bad("want a CPU quantity such as 2, 0.5 or 1500m")
		} else if _, err := ParseCPU(n.Value); err != nil {
			bad(err.Error())
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if t.NumField() == 0 {
				bad("write {} to set it, or leave it out")
			} else {
				bad(fmt.Sprintf("want a mapping with keys %s", strings.Join(structKeys(t), ", ")))
			}
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
			if !ok || k.Kind != yaml.ScalarNode {
				msg := "unknown field"
				if s := suggest(k.Value, structKeys(t)); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				if len(structKeys(t)) == 0 {
					msg += " (write {} to set it)"
				} else {
					msg += fmt.Sprintf(" (allowed: %s)", strings.Join(structKeys(t), ", "))
				}
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
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			sub := joinPath(path, k.Value)
			switch {
			case k.Kind != yaml.ScalarNode:
				*errs = append(*errs, &FieldError{File: file, Line: k.Line, Field: path, Msg: "a list or mapping is not a header name: write a name"})
				continue
			case seen[k.Value]:
				*errs = append(*errs, &FieldError{File: file, Line: k.Line, Field: sub, Msg: "duplicate key"})
				continue
			}
			seen[k.Value] = true
			checkShape(file, n.Content[i+1], t.Elem(), sub, errs)
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
				return
			}
			checkKnobScalar(n, spec, bad)
			return
		}
		checkScalar(n, t, bad)
	}
}

// checkKnobScalar catches what KnobSpec.Set, which reads text as the command line gives it,
// accepts but the YAML decoder reads differently or not at all: a quoted number ("100" is
// text to YAML), 1 or t for a bool, and a number with a leading zero, which YAML reads as octal.
func checkKnobScalar(n *yaml.Node, spec KnobSpec, bad func(string)) {
	switch spec.Type {
	case Uint32:
		if n.Tag != "!!int" {
			bad(fmt.Sprintf("%q is not a whole number", n.Value))
			return
		}
		dec, _ := strconv.ParseUint(strings.TrimSpace(n.Value), 10, 64)
		if v, err := strconv.ParseInt(n.Value, 0, 64); err != nil || uint64(v) != dec {
			bad(fmt.Sprintf("%q: write the number in decimal without leading zeros (YAML reads 0100 as octal)", n.Value))
		}
	case Bool:
		if n.Tag != "!!bool" {
			bad(fmt.Sprintf("%q is not true or false", n.Value))
		}
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
		// NaN and infinities parse, but no field takes them.
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || (n.Tag != "!!int" && n.Tag != "!!float") {
			bad(fmt.Sprintf("%q is not a number", n.Value))
		} else if math.IsNaN(f) || math.IsInf(f, 0) {
			bad(fmt.Sprintf("%q is not a finite number", n.Value))
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
	if key == "" {
		key = `""` // an empty key still gets a field path the error can show
	}
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

// Suggest returns the candidate closest to s when it is close enough to be a typo, or "":
// for a misspelt key, knob or flag value, "did you mean ...?".
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

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

// lineOf finds the line of the value at a dotted path in a document, or the line of the
// deepest part of the path that exists. A part may index a list: response_flags[1].
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		name, index := part, -1
		if i := strings.IndexByte(part, '['); i > 0 && strings.HasSuffix(part, "]") {
			if v, err := strconv.Atoi(part[i+1 : len(part)-1]); err == nil {
				name, index = part[:i], v
			}
		}
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				n, line, found = n.Content[i+1], n.Content[i].Line, true
				break
			}
		}
		if !found {
			return line
		}
		if index >= 0 {
			if n.Kind == yaml.AliasNode {
				n = n.Alias
			}
			if n.Kind != yaml.SequenceNode || index >= len(n.Content) {
				return line
			}
			n = n.Content[index]
			line = n.Line
		}
	}
	return line
}
