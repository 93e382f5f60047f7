package stacks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The two texts of knobs besides the catalog's YAML: the stack config igwlab:knobs, a flat
// JSON object of knob path to value, and Envoy's own JSON, nested by the knob's path under
// the HttpConnectionManager ("hcm.") or the Listener ("listener."), as an EnvoyFilter patch
// carries it and /config_dump shows it. Both are read and written here, from the registry.

// MarshalJSON writes the set knobs as a flat object of path to value text, sorted by path:
// {"hcm.drain_timeout":"1s"}.
func (k Knobs) MarshalJSON() ([]byte, error) {
	m := map[string]string{}
	for _, kv := range k.Set() {
		m[kv.Path] = kv.Value
	}
	return json.Marshal(m)
}

// MarshalYAML writes the set knobs as the catalog does: nested by their Envoy names under hcm
// and listener, unset knobs left out (the catalog's decoder reads it back).
func (k Knobs) MarshalYAML() (any, error) {
	out := map[string]any{}
	for _, section := range []string{"hcm", "listener"} {
		if m := k.Envoy(section + "."); len(m) > 0 {
			out[section] = m
		}
	}
	return out, nil
}

// ErrKnobsNotObject is knobs JSON that is not one object.
var ErrKnobsNotObject = errors.New("not a JSON object of knob path to value")

// KnobJSONError is one bad entry of knobs JSON: Entry is the path (path=value for a bad value)
// and Allowed says what is allowed.
type KnobJSONError struct{ Entry, Allowed string }

func (e *KnobJSONError) Error() string { return fmt.Sprintf("%s: allowed %s", e.Entry, e.Allowed) }

// UnmarshalJSON reads a flat object of knob path to value, each checked against Envoy's range
// as the catalog is. Numbers keep their text (1e400 is out of range, not a JSON error), a knob
// given twice is an error rather than last-one-wins, and {} sets a presence knob. Every bad
// entry is reported (as *KnobJSONError, joined); a text that is not one object is
// ErrKnobsNotObject.
func (k *Knobs) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ErrKnobsNotObject
	}
	values := map[string]any{}
	var errs []error
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ErrKnobsNotObject
		}
		p, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return ErrKnobsNotObject
		}
		if _, dup := values[p]; dup {
			errs = append(errs, &KnobJSONError{p, "each knob once (it is given twice)"})
			continue
		}
		values[p] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return ErrKnobsNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrKnobsNotObject // something after the object
	}
	var out Knobs
	for _, p := range slices.Sorted(maps.Keys(values)) {
		spec, ok := Lookup(p)
		if !ok {
			allowed := "a knob"
			if s := Suggest(p, KnobPaths()); s != "" {
				allowed += fmt.Sprintf(" (did you mean %s?)", s)
			}
			errs = append(errs, &KnobJSONError{p, allowed + ": one of " + strings.Join(KnobPaths(), ", ")})
			continue
		}
		text := jsonText(values[p])
		if err := spec.Set(&out, text); err != nil {
			errs = append(errs, &KnobJSONError{p + "=" + text, spec.Range() + " " + spec.Unit})
		}
	}
	*k = out
	return errors.Join(errs...)
}

// jsonText is a decoded JSON value as knob text.
func jsonText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		if len(v) == 0 {
			return "{}"
		}
		return "{...}"
	default: // null, a list
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// Envoy nests the set knobs under prefix ("hcm." or "listener.") as Envoy's JSON: numbers as
// numbers, durations as "10s", booleans, and {} for presence knobs.
func (k Knobs) Envoy(prefix string) map[string]any {
	out := map[string]any{}
	for _, s := range Registry {
		rest, ok := strings.CutPrefix(s.Path, prefix)
		if !ok {
			continue
		}
		if v, ok := s.envoyValue(&k); ok {
			put(out, strings.Split(rest, "."), v)
		}
	}
	return out
}

// envoyValue is the knob's value in k as Envoy's JSON writes it.
func (s KnobSpec) envoyValue(k *Knobs) (any, bool) {
	v, ok := s.Value(k)
	if !ok {
		return nil, false
	}
	switch s.Type {
	case Uint32:
		return uint64(v.(uint32)), true
	case Presence:
		return map[string]any{}, true
	case Bool:
		return v, true
	default:
		text, _ := s.Get(k)
		return text, true
	}
}

func put(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// ReadEnvoy sets in k every knob found in m, Envoy's JSON of the section prefix names ("hcm."
// or "listener."). A field that is not a knob is an error (a knob the runner cannot see would
// be a knob it cannot verify), except "@type" and the skip fields, which belong to something else.
func (k *Knobs) ReadEnvoy(m map[string]any, prefix string, skip ...string) error {
	return k.readEnvoy(m, prefix, "", skip)
}

func (k *Knobs) readEnvoy(m map[string]any, prefix, path string, skip []string) error {
	for _, key := range slices.Sorted(maps.Keys(m)) {
		if key == "@type" || (path == "" && slices.Contains(skip, key)) {
			continue
		}
		full := prefix + path + key
		if spec, ok := Lookup(full); ok {
			if err := spec.SetEnvoy(k, m[key]); err != nil {
				return fmt.Errorf("%s: %v", full, err)
			}
			continue
		}
		sub, ok := m[key].(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not a knob igwlab knows (see igwlab knobs)", full)
		}
		if err := k.readEnvoy(sub, prefix, path+key+".", nil); err != nil {
			return err
		}
	}
	return nil
}

// SetEnvoy stores a knob's value given as Envoy's JSON decodes it (a number, "10s", a
// boolean, or an object for a presence knob), checking Envoy's range.
func (s KnobSpec) SetEnvoy(k *Knobs, v any) error {
	text := jsonText(v)
	if s.Type == Presence {
		text = "{}"
	}
	return s.Set(k, text)
}
