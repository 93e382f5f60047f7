package envoyfilter

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/stacks"
)

func catalog(t *testing.T) []*stacks.Scenario {
	t.Helper()
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat.All()
}

// TestGoldenEnvoyFilters renders every scenario's EnvoyFilter (with the lab's values) and
// compares it with testdata/<scenario>.yaml. Run with -update to accept a change.
func TestGoldenEnvoyFilters(t *testing.T) {
	for _, sc := range catalog(t) {
		got, err := YAML(Object(DefaultName, sc.Lab(), DefaultTarget))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join("testdata", sc.Name+".yaml"), got)
	}
}

// TestEveryScenarioValidatesAgainstEnvoyAndIstio decodes every rendered spec into istio.io/api's
// EnvoyFilter and every patch into Envoy's protos, unknown fields rejected.
func TestEveryScenarioValidatesAgainstEnvoyAndIstio(t *testing.T) {
	for _, sc := range catalog(t) {
		for target, eff := range map[string]stacks.Scenario{"lab": sc.Lab(), "with local departures": sc.WithLocal()} {
			if err := Validate(Spec(eff, DefaultTarget)); err != nil {
				t.Errorf("%s (%s): %v", sc.Name, target, err)
			}
			if ra := RequestAuthentication(eff, DefaultTarget, `{"keys":[]}`); ra != nil {
				if err := ValidateRequestAuthentication(ra); err != nil {
					t.Errorf("%s: %v", sc.Name, err)
				}
			}
		}
	}
}

// TestMisspeltKnobFailsValidation is the guard the proto check exists for: a field Envoy does
// not have must be caught before any cluster sees it.
func TestMisspeltKnobFailsValidation(t *testing.T) {
	cases := map[string]func(spec map[string]any){
		"misspelt HCM field": func(spec map[string]any) {
			tc := typedConfig(spec)
			h2 := tc["http2_protocol_options"].(map[string]any)
			h2["max_concurent_streams"] = h2["max_concurrent_streams"]
			delete(h2, "max_concurrent_streams")
		},
		"field on the wrong message": func(spec map[string]any) {
			typedConfig(spec)["per_connection_buffer_limit_bytes"] = 1024 // a Listener field, not an HCM one
		},
		"wrong value type": func(spec map[string]any) {
			typedConfig(spec)["http2_protocol_options"].(map[string]any)["max_concurrent_streams"] = "lots"
		},
		"unknown applyTo": func(spec map[string]any) {
			spec["configPatches"].([]any)[0].(map[string]any)["applyTo"] = "NETWORK_FILTERS"
		},
		"selector instead of workloadSelector": func(spec map[string]any) {
			spec["selector"] = spec["workloadSelector"]
			delete(spec, "workloadSelector")
		},
	}
	for name, edit := range cases {
		var sc stacks.Scenario
		for _, s := range catalog(t) {
			if s.Name == "04-mrpc" {
				sc = s.Lab()
			}
		}
		spec := Spec(sc, DefaultTarget)
		edit(spec)
		if err := Validate(spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func typedConfig(spec map[string]any) map[string]any {
	p := spec["configPatches"].([]any)[0].(map[string]any)
	return p["patch"].(map[string]any)["value"].(map[string]any)["typed_config"].(map[string]any)
}

// TestKnobsRoundTrip reads every scenario's knobs back out of its EnvoyFilter.
func TestKnobsRoundTrip(t *testing.T) {
	for _, sc := range catalog(t) {
		eff := sc.Lab()
		// Through YAML and back, as the runner reads what the Pulumi program rendered; an
		// east-west scenario's knobs from the waypoint's filter.
		obj := Object(DefaultName, eff, DefaultTarget)
		if eff.EastWest != nil && eff.EastWest.Via != stacks.ViaZtunnel {
			obj = WaypointObject(WaypointName, eff, DefaultWaypoint)
		}
		b, _ := YAML(obj)
		var back map[string]any
		if err := yaml.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		k, al, err := Knobs(back["spec"].(map[string]any))
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if !reflect.DeepEqual(k.Set(), eff.Knobs.Set()) {
			t.Errorf("%s: read back %v, want %v", sc.Name, k.Set(), eff.Knobs.Set())
		}
		if (al != nil) != (eff.Filters.AccessLog != nil) {
			t.Errorf("%s: access log read back %v", sc.Name, al)
		}
	}
	_, _, err := Knobs(map[string]any{"configPatches": []any{map[string]any{"applyTo": "LISTENER",
		"patch": map[string]any{"value": map[string]any{"tcp_backlog_size": 10.0}}}}})
	if err == nil || !strings.Contains(err.Error(), "listener.tcp_backlog_size") {
		t.Fatalf("unknown knob read back: %v", err)
	}
}

// TestGoldenWaypointEnvoyFilters renders the waypoint's filter of every east-west scenario
// through the waypoint, checks it against istio.io/api and Envoy's protos, and compares it with
// testdata/waypoint/<scenario>.yaml (infra/istioproof feeds those to Istio's control plane).
// An east-west scenario's gateway filter carries none of its knobs.
func TestGoldenWaypointEnvoyFilters(t *testing.T) {
	n := 0
	for _, sc := range catalog(t) {
		if sc.EastWest == nil || sc.EastWest.Via == stacks.ViaZtunnel {
			continue
		}
		n++
		for _, eff := range []stacks.Scenario{sc.Lab(), sc.WithLocal()} {
			if err := Validate(WaypointSpec(eff, DefaultWaypoint)); err != nil {
				t.Errorf("%s: %v", sc.Name, err)
			}
			if p := Spec(eff, DefaultTarget)["configPatches"].([]any); len(p) > 1 { // the push tag's at most
				t.Errorf("%s: the gateway's filter carries the waypoint's knobs: %v", sc.Name, p)
			}
		}
		got, err := YAML(WaypointObject(WaypointName, sc.Lab(), DefaultWaypoint))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join("testdata", "waypoint", sc.Name+".yaml"), got)
	}
	if n == 0 {
		t.Fatal("no east-west scenario through the waypoint in the catalog")
	}
}
