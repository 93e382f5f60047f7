package stacks

import (
	"slices"
	"strings"
	"testing"
)

const mrpc = "hcm.common_http_protocol_options.max_requests_per_connection"

// TestParseKnobValues: lists and log ranges expand to the values --set would take, and every
// bad one is refused with the knob and its allowed range or form named.
func TestParseKnobValues(t *testing.T) {
	for _, tc := range []struct {
		knob, in string
		want     []string
		err      string
	}{
		{mrpc, "30,100, 300", []string{"30", "100", "300"}, ""},
		{mrpc, "100..100000x10", []string{"100", "1000", "10000", "100000"}, ""},
		{mrpc, "10..100x3", []string{"10", "30", "90"}, ""},
		{"hcm.drain_timeout", "1s,5s", []string{"1s", "5s"}, ""},
		{mrpc, "30,-1", nil, `"-1" is out of range: allowed 0..4294967295 requests`},
		{mrpc, "1..99999999999x10", nil, "out of range: allowed 0..4294967295"},
		{"hcm.http2_protocol_options.max_concurrent_streams", "0,10", nil, "allowed 1..2147483647 streams"},
		{mrpc, "100..10x10", nil, "hi 10 is below lo 100"},
		{mrpc, "0..100x10", nil, "lo must be at least 1"},
		{mrpc, "1..100x1", nil, "factor 1: allowed above 1"},
		{mrpc, "1..100", nil, "want lo..hixF"},
		{mrpc, "a..bxc", nil, "want whole numbers"},
		{mrpc, "1..1000000000x1.01", nil, "more than 50 values"},
		{mrpc, "30,30", nil, "listed twice"},
		{mrpc, " , ", nil, "no values"},
		{"hcm.drain_timeout", "1..10x2", nil, "takes a number knob"},
		{"hcm.drain_timeout", "5 minutes", nil, "allowed 0s..315360000s"},
	} {
		spec, ok := Lookup(tc.knob)
		if !ok {
			t.Fatalf("no knob %s", tc.knob)
		}
		got, err := spec.ParseKnobValues(tc.in)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%s %q: %q, %v; want %q", tc.knob, tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.knob)):
			t.Errorf("%s %q: error %v, want it to name the knob and say %q", tc.knob, tc.in, err, tc.err)
		}
	}
}

func TestLookupKnobSuggests(t *testing.T) {
	_, err := LookupKnob("hcm.common_http_protocol_options.max_request_per_connection")
	if err == nil || !strings.Contains(err.Error(), `did you mean "`+mrpc+`"`) || !strings.Contains(err.Error(), "allowed: ") {
		t.Fatalf("%v", err)
	}
}

// TestWithKnobsWinsOverLocalDepartures: a command's knob is what runs on every target; the
// scenario's local departure for that knob goes, the others stay, and Override holds it.
func TestWithKnobsWinsOverLocalDepartures(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := cat.MustGet("04-fortio")
	var k Knobs
	spec, _ := Lookup(mrpc)
	if err := spec.Set(&k, "30"); err != nil {
		t.Fatal(err)
	}
	out := sc.WithKnobs(k)
	for name, run := range map[string]Scenario{"lab": out.Lab(), "local": out.WithLocal()} {
		if v, _ := spec.Get(&run.Knobs); v != "30" {
			t.Errorf("%s: %s = %s, want 30", name, mrpc, v)
		}
		if v, _ := Lookup("hcm.http2_protocol_options.max_concurrent_streams"); v.Path != "" {
			if got, _ := v.Get(&run.Knobs); got != "65536" {
				t.Errorf("%s: the scenario's own max_concurrent_streams went: %q", name, got)
			}
		}
	}
	if v, _ := spec.Get(&out.Override); v != "30" || len(out.Override.Set()) != 1 {
		t.Errorf("override %v", out.Override.Set())
	}
	if v, _ := spec.Get(&sc.Local.Knobs); v != "150" {
		t.Errorf("the catalog's scenario changed: local %s = %q", mrpc, v)
	}
	for _, d := range out.Departures() {
		if d.Field == "knobs."+mrpc {
			t.Errorf("the swept knob is still listed as a departure: %+v", d)
		}
	}
}
