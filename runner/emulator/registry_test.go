package emulator

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// TestEveryKnobIsEmulated: every knob of the registry is bound to a field of the listener
// config of the knob's own type, a set value reaches that field, and the config_dump the
// runner checks reads back, through the registry, as exactly the knobs in force.
func TestEveryKnobIsEmulated(t *testing.T) {
	var k stacks.Knobs
	for _, s := range stacks.Registry {
		if err := s.Set(&k, s.Example()); err != nil {
			t.Fatal(err)
		}
	}
	c := model.NewListener(Setup{Knobs: k}, "", 1)
	for _, s := range stacks.Registry {
		bind := knobFields[s.Path]
		if bind == nil {
			t.Errorf("%s: no field of listenerConfig carries it (add it to knobFields)", s.Path)
			continue
		}
		want, _ := s.Value(&k)
		if got := reflect.ValueOf(bind(c)).Elem().Interface(); got != want {
			t.Errorf("%s: field holds %v (%T), want %v (%T)", s.Path, got, got, want, want)
		}
	}
	for _, setup := range []Setup{{Knobs: k}, {}} {
		c := model.NewListener(setup, "", 1)
		b, err := json.Marshal(model.ConfigDump(c, "0.0.0.0_80", "outbound_0.0.0.0_80"))
		if err != nil {
			t.Fatal(err)
		}
		l, hcm, err := stats.GatewayListener(b, "outbound_0.0.0.0_80")
		if err != nil {
			t.Fatal(err)
		}
		var back stacks.Knobs
		if err := back.ReadEnvoy(l, "listener.", "name", "address", "filter_chains"); err != nil {
			t.Fatal(err)
		}
		if err := back.ReadEnvoy(hcm, "hcm.", "stat_prefix", "http_filters", "access_log"); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Set(), setup.Knobs.InForce().Set()) {
			t.Errorf("config_dump reads back as\n%v\nwant the knobs in force\n%v", back.Set(), setup.Knobs.InForce().Set())
		}
	}
}
