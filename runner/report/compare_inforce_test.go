package report

import (
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
)

// Two runs under different Envoy defaults say so in their comparison's header.
func TestCompareShowsWhatWasInForce(t *testing.T) {
	run := func(envoy string) *Run {
		return &Run{Target: "local", Pods: 6, Concurrency: 1, Scenarios: map[string]*analysis.Result{},
			InForce: analysis.Header{EnvoyDefaults: envoy}.InForce()}
	}
	var b strings.Builder
	if err := Compare(&b, run("1.35"), run("1.36"), "a", "b"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "A: Envoy 1.35 defaults (Istio 1.27)") || !strings.Contains(b.String(), "B: Envoy 1.36 defaults (Istio 1.28)") {
		t.Errorf("comparison header:\n%s", b.String())
	}
	b.Reset()
	if err := Compare(&b, run(""), run(""), "a", "b"); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "A: ") != 1 {
		t.Errorf("runs that recorded nothing got an in-force line:\n%s", b.String())
	}
}
