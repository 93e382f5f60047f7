package stacks

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Get returns the knob's value in k as text, and whether it is set.
func (s KnobSpec) Get(k *Knobs) (string, bool) {
	v, ok := field(reflect.ValueOf(k).Elem(), s.Path, false)
	if !ok || v.IsNil() {
		return "", false
	}
	switch x := v.Interface().(type) {
	case *uint32:
		return strconv.FormatUint(uint64(*x), 10), true
	case *Duration:
		return x.String(), true
	case *bool:
		return strconv.FormatBool(*x), true
	default:
		return "{}", true
	}
}

// Set parses text and stores it in k, checking Envoy's range.
func (s KnobSpec) Set(k *Knobs, text string) error {
	v, ok := field(reflect.ValueOf(k).Elem(), s.Path, true)
	if !ok {
		return fmt.Errorf("knob %s has no field", s.Path)
	}
	text = strings.TrimSpace(text)
	switch s.Type {
	case Uint32:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || n < s.Min || n > s.Max {
			return fmt.Errorf("%q is out of range: allowed %s %s", text, s.Range(), s.Unit)
		}
		u := uint32(n)
		v.Set(reflect.ValueOf(&u))
	case DurationKnob:
		d, err := ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%v: allowed %s", err, s.Range())
		}
		if d.D() < s.MinD || d.D() > s.MaxD {
			return fmt.Errorf("%s is out of range: allowed %s", d, s.Range())
		}
		v.Set(reflect.ValueOf(&d))
	case Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%q is not true or false", text)
		}
		v.Set(reflect.ValueOf(&b))
	case Presence:
		if text != "{}" && text != "true" {
			return fmt.Errorf("%q: write {} to set it", text)
		}
		v.Set(reflect.New(v.Type().Elem()))
	}
	return nil
}

// Check validates the value stored in k against the knob's range.
func (s KnobSpec) Check(k *Knobs) error {
	text, ok := s.Get(k)
	if !ok {
		return nil
	}
	var probe Knobs
	return s.Set(&probe, text)
}

// field walks path (yaml tags) from v. With alloc it allocates nil intermediate pointers.
func field(v reflect.Value, path string, alloc bool) (reflect.Value, bool) {
	parts := strings.Split(path, ".")
	for i, name := range parts {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !alloc {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := fieldByTag(v, name)
		if !ok {
			return reflect.Value{}, false
		}
		v = f
		if i == len(parts)-1 {
			return v, true
		}
	}
	return reflect.Value{}, false
}

func fieldByTag(v reflect.Value, tag string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) == tag {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// Set lists the knobs that are set, path -> value text, sorted by path.
func (k Knobs) Set() []KnobValue {
	var out []KnobValue
	for _, s := range Registry {
		if v, ok := s.Get(&k); ok {
			out = append(out, KnobValue{Path: s.Path, Value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// KnobValue is one set knob.
type KnobValue struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Clone returns a deep copy: every set knob gets a value of its own, copied as a value.
func (k Knobs) Clone() Knobs {
	var out Knobs
	for _, s := range Registry {
		s.copyTo(&out, &k)
	}
	return out
}

// Overlay returns k with every knob set in top replacing k's value.
func (k Knobs) Overlay(top Knobs) Knobs {
	out := k.Clone()
	for _, s := range Registry {
		s.copyTo(&out, &top)
	}
	return out
}

// InForce returns k with every unset knob set to the value Envoy runs with (InForce), where
// Envoy has one: what a gateway with these knobs is configured with.
func (k Knobs) InForce() Knobs {
	out := k.Clone()
	for _, s := range Registry {
		if _, set := s.Get(&out); !set && s.InForce != "" {
			_ = s.Set(&out, s.InForce) // the registry's own values are in range (TestRegistry)
		}
	}
	return out
}

// copyTo copies the knob's value from src into dst when src sets it, leaving dst alone
// otherwise. The copy is a new pointer: dst and src share nothing.
func (s KnobSpec) copyTo(dst, src *Knobs) {
	from, ok := field(reflect.ValueOf(src).Elem(), s.Path, false)
	if !ok || from.IsNil() {
		return
	}
	to, _ := field(reflect.ValueOf(dst).Elem(), s.Path, true)
	p := reflect.New(from.Type().Elem())
	p.Elem().Set(from.Elem())
	to.Set(p)
}

// Value returns the knob's value in k as a Go value (a uint32, a time.Duration, a bool, or
// true for a presence knob that is set), and whether it is set.
func (s KnobSpec) Value(k *Knobs) (any, bool) {
	v, ok := field(reflect.ValueOf(k).Elem(), s.Path, false)
	if !ok || v.IsNil() {
		return nil, false
	}
	switch x := v.Interface().(type) {
	case *uint32:
		return *x, true
	case *Duration:
		return x.D(), true
	case *bool:
		return *x, true
	default:
		return true, true
	}
}

// Load stores the knob's value in k into dst, a *uint32, *time.Duration or *bool (a presence
// knob stores true); an unset knob leaves dst alone.
func (s KnobSpec) Load(k *Knobs, dst any) error {
	v, ok := s.Value(k)
	if !ok {
		return nil
	}
	d := reflect.ValueOf(dst)
	if d.Kind() != reflect.Pointer || d.Elem().Type() != reflect.TypeOf(v) {
		return fmt.Errorf("knob %s holds a %T, which cannot be stored in a %T", s.Path, v, dst)
	}
	d.Elem().Set(reflect.ValueOf(v))
	return nil
}

// Effective returns the value in force for every knob: the set value or Envoy's default.
func (k Knobs) Effective() []KnobValue {
	var out []KnobValue
	for _, s := range Registry {
		v, ok := s.Get(&k)
		if !ok {
			v = s.Default
		}
		out = append(out, KnobValue{Path: s.Path, Value: v})
	}
	return out
}

// IsZero reports whether no knob is set.
func (k Knobs) IsZero() bool { return len(k.Set()) == 0 }

// HCMSet reports whether any HttpConnectionManager knob is set.
func (k Knobs) HCMSet() bool { return k.HCM != (HCMKnobs{}) }

// ListenerSet reports whether any Listener knob is set.
func (k Knobs) ListenerSet() bool { return k.Listener != (ListenerKnobs{}) }

// Short writes the set knobs on one line, by their last path element: "max_concurrent_streams=100
// drain_timeout=1s", or "no knobs (Envoy defaults)".
func (k Knobs) Short() string {
	set := k.Set()
	if len(set) == 0 {
		return "no knobs (Envoy defaults)"
	}
	parts := make([]string, len(set))
	for i, kv := range set {
		parts[i] = kv.Path[strings.LastIndex(kv.Path, ".")+1:] + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}

// Example is a value of the knob that is in range and differs from its default, for tests
// that set every knob of the registry (a knob added to it is covered without a test edit).
func (s KnobSpec) Example() string {
	switch s.Type {
	case Uint32:
		return strconv.FormatUint(min(s.Min+4321, s.Max), 10)
	case DurationKnob:
		return Duration(min(max(17*time.Second, s.MinD), s.MaxD)).String()
	case Bool:
		if s.Default == "true" {
			return "false"
		}
		return "true"
	default:
		return "{}"
	}
}
