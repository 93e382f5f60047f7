package suite

import (
	"strconv"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// Estimate is the time a suite spends where the catalog and the lab's settings fix it: per
// scenario the wait for the gateway's drain after the switch (cluster targets), the settle,
// the warm-up and the measured window. What it leaves out varies with the machine: each
// switch's pulumi up, and reading the stats and dumps.
type Estimate struct {
	Rows  []EstimateRow
	Total time.Duration
	Runs  int // scenario runs that take time (skipped ones take none)
}

// EstimateRow is one scenario's share.
type EstimateRow struct {
	Name                          string
	Drain, Settle, Warmup, Window time.Duration
	Total                         time.Duration // per run, times repeat
	Skipped                       string        // why it does not run, if it does not
}

// EstimateSuite adds up a suite over the given scenarios (in run order) on a kind of target:
// resolve is how it runs a scenario, drain the gateway's drain time after each switch (0 on a
// pool that drains at once), concurrency the Envoy workers per pod (scenarios needing more are
// skipped), repeat the runs per scenario.
func EstimateSuite(scenarios []*stacks.Scenario, resolve func(*stacks.Scenario) (stacks.Scenario, []stacks.Departure), drain time.Duration, concurrency, repeat int) Estimate {
	var e Estimate
	for _, lab := range scenarios {
		sc, _ := resolve(lab)
		r := EstimateRow{Name: sc.Name, Drain: drain, Settle: sc.Load.Settle.D(), Warmup: sc.Load.Warmup.D(), Window: sc.Load.Duration.D()}
		if need := sc.Requires.MinConcurrency; need > concurrency {
			r.Skipped = "needs proxyConcurrency >= " + strconv.Itoa(need)
		} else {
			r.Total = time.Duration(repeat) * (r.Drain + r.Settle + r.Warmup + r.Window)
			e.Total += r.Total
			e.Runs += repeat
		}
		e.Rows = append(e.Rows, r)
	}
	return e
}
