package stacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// allSet sets every registered knob to a value inside its range that is not its default.
func allSet(t *testing.T) Knobs {
	t.Helper()
	var k Knobs
	for _, s := range Registry {
		if err := s.Set(&k, s.Example()); err != nil {
			t.Fatalf("%s: %v", s.Path, err)
		}
	}
	return k
}

func TestCloneSharesNothing(t *testing.T) {
	k := allSet(t)
	c := k.Clone()
	if !reflect.DeepEqual(k, c) {
		t.Fatalf("clone differs:\n%+v\n%+v", k, c)
	}
	*c.HCM.HTTP2.MaxConcurrentStreams = 1
	*c.HCM.DrainTimeout = Duration(time.Hour)
	*c.Listener.EnableReusePort = true
	if *k.HCM.HTTP2.MaxConcurrentStreams != 4322 || k.HCM.DrainTimeout.D() != 17*time.Second || *k.Listener.EnableReusePort {
		t.Fatalf("changing the clone changed the original: %+v", k.Set())
	}
	if !(Knobs{}).Clone().IsZero() {
		t.Fatal("a clone of no knobs sets some")
	}
}

func TestKnobsJSONRoundTrip(t *testing.T) {
	k := allSet(t)
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var back Knobs
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(k, back) {
		t.Fatalf("round trip through %s:\n%v\n%v", b, k.Set(), back.Set())
	}
	if b, _ := json.Marshal(Knobs{}); string(b) != "{}" {
		t.Fatalf("no knobs: %s", b)
	}
}

// TestKnobsYAMLRoundTrip: knobs written as YAML read back, through the catalog's own decoder
// and shape check, as the same knobs.
func TestKnobsYAMLRoundTrip(t *testing.T) {
	k := allSet(t)
	b, err := yaml.Marshal(Scenario{Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var errs []error
	checkShape("knobs.yaml", doc.Content[0].Content[1+2*fieldIndex(t, doc.Content[0], "knobs")], reflect.TypeOf(Knobs{}), "knobs", &errs)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", b, errs)
	}
	var back Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(k, back.Knobs) {
		t.Fatalf("round trip through\n%s\n%v\n%v", b, k.Set(), back.Knobs.Set())
	}
	if b, _ := yaml.Marshal(Knobs{}); strings.TrimSpace(string(b)) != "{}" {
		t.Fatalf("no knobs: %s", b)
	}
}

// fieldIndex is the position of key among a mapping node's keys.
func fieldIndex(t *testing.T, m *yaml.Node, key string) int {
	t.Helper()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i / 2
		}
	}
	t.Fatalf("no %s in the document", key)
	return 0
}

func TestKnobsJSONErrors(t *testing.T) {
	const mcs = "hcm.http2_protocol_options.max_concurrent_streams"
	cases := []struct{ raw, want string }{
		{`{"` + mcs + `": 0}`, mcs + "=0: allowed 1..2147483647 streams"},
		{`{"` + mcs + `": 1e400}`, mcs + "=1e400"},
		{`{"` + mcs + `": "5", "` + mcs + `": "6"}`, "each knob once"},
		{`{"hcm.max_concurent_streams": 1}`, "one of " + mcs},
		{`{"listener.connection_balance_config.exact_balance": {"x": 1}}`, "exact_balance={...}"},
		{`{"hcm.drain_timeout": null}`, "hcm.drain_timeout=null"},
	}
	for _, c := range cases {
		var k Knobs
		err := k.UnmarshalJSON([]byte(c.raw))
		var ke *KnobJSONError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a KnobJSONError with %q", c.raw, err, c.want)
		}
	}
	for _, raw := range []string{``, `[]`, `{"a":1} {}`, `{"a"}`, `"x"`} {
		var k Knobs
		if err := k.UnmarshalJSON([]byte(raw)); !errors.Is(err, ErrKnobsNotObject) {
			t.Errorf("%q: %v, want ErrKnobsNotObject", raw, err)
		}
	}
}

// TestEnvoyJSONRoundTrip: every knob written as Envoy's JSON (the EnvoyFilter patch, the
// config_dump) reads back as the same knob, through a real JSON encoding.
func TestEnvoyJSONRoundTrip(t *testing.T) {
	k := allSet(t)
	var back Knobs
	for _, prefix := range []string{"hcm.", "listener."} {
		b, err := json.Marshal(k.Envoy(prefix))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if err := back.ReadEnvoy(m, prefix); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	if !reflect.DeepEqual(k.Set(), back.Set()) {
		t.Fatalf("round trip:\n%v\n%v", k.Set(), back.Set())
	}
	err := back.ReadEnvoy(map[string]any{"http2_protocol_options": map[string]any{"max_frame_size": 1.0}}, "hcm.")
	if err == nil || !strings.Contains(err.Error(), "hcm.http2_protocol_options.max_frame_size is not a knob") {
		t.Fatalf("unknown field: %v", err)
	}
}

// TestInForceIsWhatEnvoyRuns: with nothing set, every knob with a value Envoy runs with is
// set to it, and the rest stay unset; a set knob is kept.
func TestInForceIsWhatEnvoyRuns(t *testing.T) {
	in := (Knobs{}).InForce()
	for _, s := range Registry {
		v, set := s.Get(&in)
		if set != (s.InForce != "") || (set && v != s.InForce) {
			t.Errorf("%s: in force %q (set %v), registry says %q", s.Path, v, set, s.InForce)
		}
	}
	k := allSet(t)
	if !reflect.DeepEqual(k.InForce().Set(), k.Set()) {
		t.Fatal("InForce changed knobs that were set")
	}
	var streams uint32
	if err := Registry[0].Load(&in, &streams); err != nil || streams != 2147483647 {
		t.Fatalf("Load: %d, %v", streams, err)
	}
	var wrong bool
	if err := Registry[0].Load(&in, &wrong); err == nil {
		t.Fatal("Load into a bool took a uint32")
	}
}
