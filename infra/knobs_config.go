package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/igwlab/igwlab/stacks"
)

// ParseKnobs reads igwlab:knobs: a JSON object of knob path to value, each checked against
// Envoy's range as the catalog is. Numbers keep their text (1e400 is out of range, not a JSON
// error), a knob given twice is an error rather than last-one-wins, and {} sets a presence knob.
func ParseKnobs(raw string) (stacks.Knobs, error) {
	var k stacks.Knobs
	notObject := &ConfigError{"knobs", raw, `a JSON object of knob path to value, such as {"hcm.http2_protocol_options.max_concurrent_streams": "100"}`}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return k, notObject
	}
	values := map[string]any{}
	var errs []error
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return k, notObject
		}
		p, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return k, notObject
		}
		if _, dup := values[p]; dup {
			errs = append(errs, &ConfigError{"knobs", p, "each knob once (it is given twice)"})
			continue
		}
		values[p] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return k, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return k, notObject // something after the object
	}
	paths := make([]string, 0, len(values))
	for p := range values {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		spec, ok := stacks.Lookup(p)
		if !ok {
			allowed := "a knob"
			if s := stacks.Suggest(p, stacks.KnobPaths()); s != "" {
				allowed += fmt.Sprintf(" (did you mean %s?)", s)
			}
			errs = append(errs, &ConfigError{"knobs", p, allowed + ": one of " + strings.Join(stacks.KnobPaths(), ", ")})
			continue
		}
		var text string
		switch v := values[p].(type) {
		case string:
			text = v
		case json.Number:
			text = v.String()
		case bool:
			text = strconv.FormatBool(v)
		case map[string]any:
			text = "{...}"
			if len(v) == 0 {
				text = "{}"
			}
		default: // null, a list
			b, _ := json.Marshal(v)
			text = string(b)
		}
		if err := spec.Set(&k, text); err != nil {
			errs = append(errs, &ConfigError{"knobs", p + "=" + text, spec.Range() + " " + spec.Unit})
		}
	}
	return k, errors.Join(errs...)
}
