package sweep

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/gateway/simulated"
	"github.com/igwlab/igwlab/runner/sim"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// TestForkedSweepIsTheSameOnAnyCores: on the simulated target a sweep's runs go side by side,
// each on a fresh pool seeded by its place in the sweep, so one core or two give the same
// placements run for run, and every value gets its band over its placements.
func TestForkedSweepIsTheSameOnAnyCores(t *testing.T) {
	spec, _ := stacks.Lookup(mrpc)
	run := func(procs int) *Sweep {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		cfg := sim.Defaults
		cfg.Seed = 7
		tg, err := simulated.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sw, err := Run(context.Background(), Options{Target: tg, Scenario: testutil.Scenario(t, "04-fortio"), Knob: spec, Values: []string{"100", "10000"},
			Repeat: 3, Duration: time.Second, RunSettings: suite.RunSettings{OutDir: t.TempDir(), NoReport: true}})
		if err != nil {
			t.Fatal(err)
		}
		return sw
	}
	one, two := run(1), run(2)
	for i, p := range one.Points {
		q := two.Points[i]
		if p.Bands == nil || p.Bands.Placements != 3 || len(p.Runs) != 3 {
			t.Fatalf("value %s: bands %+v over %d runs", p.Value, p.Bands, len(p.Runs))
		}
		for r := range p.Runs {
			if p.Runs[r].CV != q.Runs[r].CV || p.Runs[r].Connections != q.Runs[r].Connections {
				t.Errorf("value %s run %d: CV %.4f over %.0f on one core, %.4f over %.0f on two", p.Value, r+1,
					p.Runs[r].CV, p.Runs[r].Connections, q.Runs[r].CV, q.Runs[r].Connections)
			}
		}
	}
	if one.Points[0].Connections <= one.Points[1].Connections {
		t.Errorf("rotation every 100 requests opened %v connections, every 10000 %v", one.Points[0].Connections, one.Points[1].Connections)
	}
}
