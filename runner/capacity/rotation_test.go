package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

func knobs(t *testing.T, settings ...string) stacks.Knobs {
	t.Helper()
	var k stacks.Knobs
	for _, s := range settings {
		if _, err := stacks.ParseKnobSetting(&k, s); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// TestRotationArithmetic: the ceiling is mu x (1 + S/life) with life the shorter of N/mu and
// the duration, at most the pool's workers x mu, and only where one connection at a time
// measured mu and the rotating client held one connection taking requests.
func TestRotationArithmetic(t *testing.T) {
	slo, _ := ParseSLO("p99=100ms")
	const mu = 2300.0
	search := func(withoutConns, busy float64) *Capacity {
		ok := analysis.StatusOK
		return &Capacity{SLO: slo, Curves: []*Curve{
			{Name: "without", Capacity: 2250, Steps: []*Step{
				{Status: ok, Achieved: 1000, Busy: 0.43, BusyMeasured: true, ConcurrentConnections: 1},
				{Status: ok, Achieved: mu, Busy: busy, BusyMeasured: busy > 0, ConcurrentConnections: withoutConns},
				{Status: analysis.StatusFailed, Achieved: 9999, Busy: 1, BusyMeasured: true}, // a failed run measures nothing
			}},
			{Name: "with", Capacity: 2375, Steps: []*Step{{Status: ok, ConcurrentConnections: 2}}},
		}}
	}
	trigger := testutil.Scenario(t, "02-trigger")
	for _, tc := range []struct {
		name    string
		c       *Capacity
		base    *stacks.Scenario
		set     stacks.Knobs
		workers int
		want    float64 // ceiling rps; 0: no arithmetic
		says    string
	}{
		// life = 1000/2300 s; 2300 x (1 + 0.1 x 2.3) = 2829.
		{"count", search(1, 0.99), trigger, knobs(t, mrpc+"=1000"), 6, mu * (1 + 0.1*mu/1000), "max_requests_per_connection=1000"},
		{"duration shorter than N/mu", search(1, 0.99), trigger, knobs(t, mrpc+"=1000", "hcm.common_http_protocol_options.max_connection_duration=0.2s"), 6, mu * 1.5, "max_connection_duration=0.2s"},
		{"duration alone", search(1, 0.99), trigger, knobs(t, "hcm.common_http_protocol_options.max_connection_duration=1s"), 6, mu * 1.1, "max_connection_duration=1s"},
		{"the pool caps it", search(1, 0.99), trigger, knobs(t, mrpc+"=10"), 2, 2 * mu, ""},
		{"no rotation knob", search(1, 0.99), trigger, knobs(t, "hcm.http2_protocol_options.max_concurrent_streams=128"), 6, 0, ""},
		{"the scenario rotates already", search(1, 0.99), testutil.Scenario(t, "04-mrpc"), knobs(t, mrpc+"=100"), 6, 0, ""},
		{"the stream cap makes the client dial more", search(1, 0.99), trigger, knobs(t, mrpc+"=1000", "hcm.http2_protocol_options.max_concurrent_streams=100"), 6, 0, ""},
		{"a fortio client holds several connections", search(1, 0.99), testutil.Scenario(t, "04-fortio"), knobs(t, "hcm.common_http_protocol_options.max_connection_duration=1s"), 6, 0, ""},
		{"mu is not one connection's", search(3, 0.99), trigger, knobs(t, mrpc+"=1000"), 6, 0, ""},
		{"no worker saturated", search(1, 0.5), trigger, knobs(t, mrpc+"=1000"), 6, 0, ""},
		{"busy not measured (a real gateway)", search(1, 0), trigger, knobs(t, mrpc+"=1000"), 6, 0, ""},
	} {
		r := rotation(tc.c, tc.base, tc.set, tc.workers)
		switch {
		case tc.want == 0 && r != nil:
			t.Errorf("%s: arithmetic where it does not apply: %s", tc.name, r.Text)
		case tc.want == 0:
		case r == nil:
			t.Errorf("%s: no arithmetic", tc.name)
		case math.Abs(r.CeilingRPS-tc.want) > 1 || r.WorkerRPS != mu || math.Abs(r.CeilingRatio-tc.want/2250) > 1e-3:
			t.Errorf("%s: ceiling %.1f rps (%.3fx), mu %.0f; want %.1f", tc.name, r.CeilingRPS, r.CeilingRatio, r.WorkerRPS, tc.want)
		case !strings.Contains(r.Text, tc.says) || !strings.Contains(r.Text, "the search found 2375 rps"):
			t.Errorf("%s: %s", tc.name, r.Text)
		}
	}
}
