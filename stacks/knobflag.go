package stacks

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// LookupKnob returns the spec of the knob at path, or an error that names it, suggests the
// closest knob when path looks like a typo of one, and lists the allowed paths: the message
// every command-line knob (--set, --knob) gives.
func LookupKnob(path string) (KnobSpec, error) {
	path = strings.TrimSpace(path)
	if spec, ok := Lookup(path); ok {
		return spec, nil
	}
	msg := fmt.Sprintf("%q is not a knob", path)
	if sug := Suggest(path, KnobPaths()); sug != "" {
		msg += fmt.Sprintf("; did you mean %q?", sug)
	}
	return KnobSpec{}, fmt.Errorf("%s (allowed: %s; igwlab knobs lists their ranges)", msg, strings.Join(KnobPaths(), ", "))
}

// ParseKnobSetting reads path=value and stores the value in k, checked against Envoy's range;
// errors name the knob and its allowed range.
func ParseKnobSetting(k *Knobs, setting string) (KnobSpec, error) {
	path, val, ok := strings.Cut(setting, "=")
	if !ok {
		return KnobSpec{}, fmt.Errorf("%q: want knob=value, e.g. hcm.http2_protocol_options.max_concurrent_streams=100", setting)
	}
	spec, err := LookupKnob(path)
	if err != nil {
		return spec, err
	}
	if err := spec.Set(k, val); err != nil {
		return spec, fmt.Errorf("%s: %v", spec.Path, err)
	}
	return spec, nil
}

// ParseKnobValues reads the values a sweep takes for a knob: a comma-separated list
// ("30,100,300") or, for a number knob, a log range "lo..hixF" (lo, lo*F, lo*F^2, ... up to hi:
// "100..100000x10" is 100,1000,10000,100000). Each value is checked against the knob's range
// as --set checks it, and returned as the text --set takes.
func (s KnobSpec) ParseKnobValues(text string) ([]string, error) {
	raw, err := ListValues(s.Path, text, s.Type == Uint32, s.Range()+" "+s.Unit)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		var k Knobs
		if err := s.Set(&k, v); err != nil {
			return nil, fmt.Errorf("%s: %v", s.Path, err)
		}
		norm, _ := s.Get(&k)
		if seen[norm] {
			return nil, fmt.Errorf("%s: value %s is listed twice", s.Path, norm)
		}
		seen[norm] = true
		out = append(out, norm)
	}
	return out, nil
}

// ListValues splits a sweep's values of name, a,b,c, or expands the log range lo..hixF where
// numeric (a range of anything else is refused, naming allowed); at most maxSweepValues.
// Each value is still to be checked against name's range.
func ListValues(name, text string, numeric bool, allowed string) ([]string, error) {
	text = strings.TrimSpace(text)
	var raw []string
	if lo, rest, ok := strings.Cut(text, ".."); ok {
		if !numeric {
			return nil, fmt.Errorf("%s: a range lo..hixF takes a number knob; this one is %s: list its values (a,b,c)", name, allowed)
		}
		var err error
		if raw, err = logRange(lo, rest); err != nil {
			return nil, fmt.Errorf("%s: range %q: %v", name, text, err)
		}
	} else {
		for _, v := range strings.Split(text, ",") {
			if v = strings.TrimSpace(v); v != "" {
				raw = append(raw, v)
			}
		}
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no values: want a,b,c or lo..hixF (allowed %s)", name, allowed)
	}
	if len(raw) > maxSweepValues {
		return nil, fmt.Errorf("%s: %d values: allowed at most %d", name, len(raw), maxSweepValues)
	}
	return raw, nil
}

// maxSweepValues bounds a sweep: each value is a run of its own.
const maxSweepValues = 50

// logRange expands "lo" and "hixF" into lo, lo*F, ... while <= hi.
func logRange(loText, rest string) ([]string, error) {
	hiText, fText, ok := strings.Cut(rest, "x")
	if !ok {
		return nil, fmt.Errorf("want lo..hixF, e.g. 100..100000x10")
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(loText), 10, 64)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(hiText), 10, 64)
	f, err3 := strconv.ParseFloat(strings.TrimSpace(fText), 64)
	switch {
	case err1 != nil || err2 != nil || err3 != nil:
		return nil, fmt.Errorf("want whole numbers lo and hi and a factor F, e.g. 100..100000x10")
	case lo == 0:
		return nil, fmt.Errorf("lo must be at least 1 (a log range cannot start at 0)")
	case hi < lo:
		return nil, fmt.Errorf("hi %d is below lo %d", hi, lo)
	case !(f > 1) || math.IsInf(f, 0):
		return nil, fmt.Errorf("factor %g: allowed above 1", f)
	}
	var out []string
	for v := float64(lo); v <= float64(hi)*(1+1e-9); v *= f {
		out = append(out, strconv.FormatUint(uint64(math.Round(v)), 10))
		if len(out) > maxSweepValues {
			return nil, fmt.Errorf("more than %d values: use a larger factor", maxSweepValues)
		}
	}
	return out, nil
}

// WithKnobs returns the scenario with knobs set on top of its own, on every target: the lab's
// values, and its local departures less the knobs set here (a command's setting wins over a
// departure). Override keeps them, so that a target switched through the stack config can
// write them as the override they are.
func (s *Scenario) WithKnobs(set Knobs) *Scenario {
	out := s.Lab()
	out.Knobs = out.Knobs.Overlay(set)
	out.Override = s.Override.Overlay(set)
	out.Local.Knobs = s.Local.Knobs.Clone()
	for _, spec := range Registry {
		if _, ok := spec.Get(&set); ok {
			spec.clear(&out.Local.Knobs)
		}
	}
	return &out
}

// clear unsets the knob in k.
func (s KnobSpec) clear(k *Knobs) {
	if v, ok := field(reflect.ValueOf(k).Elem(), s.Path, false); ok {
		v.Set(reflect.Zero(v.Type()))
	}
}
