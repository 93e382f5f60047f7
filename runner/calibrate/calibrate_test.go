package calibrate

import (
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

func result(name string, conns map[string]float64, busy, rps, p99 float64) *analysis.Result {
	r := &analysis.Result{Name: name, Status: analysis.StatusOK, RPS: rps, P99Ms: p99}
	r.Connections, r.BusyMeasured, r.BusyMax, r.ChanceVerdict = conns, true, busy, analysis.WithinChance
	r.WorkerCV = map[string]float64{}
	for pod := range conns {
		r.WorkerCV[pod] = 0
	}
	for _, c := range conns {
		r.ConnectionsTotal += c
	}
	return r
}

// onHot gives r's hottest worker, the one of pod hot, and every pod's requests a second over
// a 6 s window.
func onHot(r *analysis.Result, hot string, rps map[string]float64) *analysis.Result {
	r.WindowS, r.HotWorker, r.RequestsPerPod = 6, hot+"/worker_0", map[string]float64{}
	for pod, v := range rps {
		r.RequestsPerPod[pod] = 6 * v
	}
	return r
}

func summary(verdict string, results ...*analysis.Result) *suite.Summary {
	s := &suite.Summary{Concurrency: 1, Scenarios: map[string]*analysis.Result{}, Hypotheses: map[string]analysis.Verdict{"H-A": {Verdict: verdict}}}
	for _, r := range results {
		s.Scenarios[r.Name] = r
		s.Order = append(s.Order, r.Name)
	}
	return s
}

// TestCompare holds each rule: calls equal, the busy share and p99 taken at the local rate,
// the tails and shares left out for a stated reason, and a call fed by a harness-bound scenario
// allowed to differ.
func TestCompare(t *testing.T) {
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	one := map[string]float64{"a": 1, "b": 0}
	many := map[string]float64{"a": 30, "b": 70}
	for _, c := range []struct {
		name       string
		local, sim *suite.Summary
		fails      []string // what Failures must name ("" none)
		skipped    string   // a reason that must be given
		checked    string   // what a comparison made must say ("" nothing)
	}{
		{"same, at the local rate", summary("PASS", result("02-trigger", one, 1, 2000, 300)),
			summary("PASS", result("02-trigger", one, 1, 2200, 270)), nil, "", ""},
		{"a call differs", summary("PASS", result("02-trigger", one, 1, 2000, 300)),
			summary("REFUTED", result("02-trigger", one, 1, 2000, 300)), []string{"H-A: local PASS, sim REFUTED"}, "", ""},
		{"busy apart at one rate", summary("PASS", result("02-trigger", one, 0.95, 2000, 300)),
			summary("PASS", result("02-trigger", one, 0.5, 2000, 300)), []string{"02-trigger hottest worker"}, "", ""},
		{"p99 apart", summary("PASS", result("02-trigger", one, 1, 2000, 300)),
			summary("PASS", result("02-trigger", one, 1, 2000, 150)), []string{"02-trigger p99"}, "", ""},
		{"a worker with several connections: p99 not compared", summary("PASS", result("01-baseline", many, 0.995, 2000, 300)),
			summary("PASS", result("01-baseline", many, 1, 2000, 150)), nil, "dispatches each connection's read buffer", ""},
		{"harness-bound: the call may differ", summary("PASS", result("01-baseline", many, 0.6, 9000, 30)),
			summary("INVESTIGATE", result("01-baseline", many, 0.95, 9000, 10)), nil, "the simulated target is the one that is Envoy", ""},
		{"laptop-bound rate: busy not compared", summary("PASS", result("01-baseline", many, 0.55, 5585, 50)),
			summary("PASS", result("01-baseline", many, 0.54, 6924, 16)), nil, "the local rate was the laptop's", ""},
		// 06-waypoint-baseline in one calibration: the local hottest worker busier than the
		// total rates say, because the laptop gave its connections more of the local rate.
		{"busy at the hottest worker's own rate", summary("PASS", onHot(result("01-baseline", many, 0.64, 6856, 30), "b", map[string]float64{"a": 2056, "b": 4800})),
			summary("PASS", onHot(result("01-baseline", many, 0.55, 7353, 17), "b", map[string]float64{"a": 3230, "b": 4123})), nil, "", "local 64%, sim 64% at the local hottest worker's rate (55% at 4123 rps on it, local 4800 rps)"},
		{"the hottest worker's cost apart at its own rate", summary("PASS", onHot(result("01-baseline", many, 0.64, 6856, 30), "b", map[string]float64{"a": 2056, "b": 4800})),
			summary("PASS", onHot(result("01-baseline", many, 0.45, 7353, 17), "b", map[string]float64{"a": 2553, "b": 4800})), []string{"01-baseline hottest worker"}, "", ""},
		{"rates apart with a saturated worker: compared", summary("PASS", result("02-trigger", one, 0.95, 2000, 300)),
			summary("PASS", result("02-trigger", one, 0.5, 3000, 200)), []string{"02-trigger hottest worker"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range []*suite.Summary{c.local, c.sim} {
				for _, r := range s.Scenarios {
					r.Name = s.Order[0]
				}
			}
			rep := Compare(cat, c.local, c.sim)
			got := strings.Join(rep.Failures(), "\n")
			for _, w := range c.fails {
				if !strings.Contains(got, w) {
					t.Errorf("failures %q lack %q", got, w)
				}
			}
			if len(c.fails) == 0 && got != "" {
				t.Errorf("unexpected failures: %s", got)
			}
			md := rep.Markdown("test")
			if c.skipped != "" && !strings.Contains(md, c.skipped) {
				t.Errorf("the page does not say %q:\n%s", c.skipped, md)
			}
			if c.checked != "" && !madeCheck(rep, c.checked) {
				t.Errorf("no comparison says %q:\n%s", c.checked, md)
			}
		})
	}
}

// madeCheck says whether a comparison of rep's says text.
func madeCheck(rep *Report, text string) bool {
	for _, row := range rep.Rows {
		for _, c := range row.Checks {
			if strings.Contains(c.Text, text) {
				return true
			}
		}
	}
	return false
}
