package envoyfilter

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/stacks"
)

// TestPushGeneration renders a config push into a scenario with HCM knobs and into one with
// none (01-baseline: the push makes the only patch), checks both against Envoy's and Istio's
// types, reads the generation and the knobs back unchanged, and keeps the rendering as a
// golden file. A tracing block the lab does not render is refused when read.
func TestPushGeneration(t *testing.T) {
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"01-baseline", "04-mrpc"} {
		sc, err := cat.MustGet(name)
		if err != nil {
			t.Fatal(err)
		}
		obj := Object(DefaultName, sc.Lab(), DefaultTarget)
		spec := obj["spec"].(map[string]any)
		WithPush(spec, DefaultTarget, 3)
		if err := Validate(spec); err != nil {
			t.Fatalf("%s with a push: %v", name, err)
		}
		// Through JSON, as the API server and istiod hand it on.
		raw, _ := json.Marshal(spec)
		var back map[string]any
		_ = json.Unmarshal(raw, &back)
		if n, err := Push(back); err != nil || n != 3 {
			t.Errorf("%s: push read back as %d, %v; want 3", name, n, err)
		}
		k, _, err := Knobs(back)
		if err != nil {
			t.Fatalf("%s: knobs with a push: %v", name, err)
		}
		if got, want := k.Short(), sc.Lab().Knobs.Short(); got != want {
			t.Errorf("%s: knobs read back %q, want %q", name, got, want)
		}
		y, err := YAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join("testdata", "push", name+".yaml"), y)
	}
	bad := Spec(stacks.Scenario{Name: "x"}, DefaultTarget)
	WithPush(bad, DefaultTarget, 1)
	hcm := bad["configPatches"].([]any)[0].(map[string]any)["patch"].(map[string]any)["value"].(map[string]any)["typed_config"].(map[string]any)
	hcm["tracing"].(map[string]any)["random_sampling"] = map[string]any{"value": 100}
	if _, _, err := Knobs(bad); err == nil || !strings.Contains(err.Error(), PushTag) {
		t.Errorf("a tracing block igwlab does not render was read: %v", err)
	}
	none := Spec(stacks.Scenario{Name: "x"}, DefaultTarget)
	WithPush(none, DefaultTarget, 0)
	if n, err := Push(none); n != 0 || err != nil || len(none["configPatches"].([]any)) != 0 {
		t.Errorf("generation 0 changed the filter: %v %v %v", n, err, none)
	}
}
