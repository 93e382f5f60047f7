package predict

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"time"

	"github.com/igwlab/igwlab/runner/fix"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/sweep"
	"github.com/igwlab/igwlab/stacks"
)

// Options configure a prediction.
type Options struct {
	Target   gateway.Target
	Scenario *stacks.Scenario
	// Repeat runs each lever that many times, each run a placement of its own, the same
	// placements for every lever (cheap on the simulated target).
	Repeat   int
	Duration time.Duration
	suite.RunSettings
}

// Prediction is predict.json.
type Prediction struct {
	Scenario string `json:"scenario"`
	Target   string `json:"target"`
	Repeat   int    `json:"repeat"`
	// Rows are the levers, best first.
	Rows []*Row `json:"rows"`
	// Best is the lever to apply (nil when none beats the scenario as it is), Expect what to
	// see afterwards, Why the reason for the choice.
	Best   *Row   `json:"best,omitempty"`
	Expect string `json:"expect"`
	Why    string `json:"why"`
	// Fix is the lever to apply in the gateway's own configuration (a server lever's).
	Fix *fix.Rendering `json:"fix,omitempty"`
	// Rule says how the rows are ranked.
	Rule  string       `json:"rule"`
	Sweep *sweep.Sweep `json:"-"`
	Dir   string       `json:"dir"`
}

// Row is one lever's outcome: the numbers of its median run, and its bands with Repeat > 1.
type Row struct {
	Lever
	Rank int `json:"rank"`
	// Ran says the lever's runs finished; Reason why not.
	Ran    bool   `json:"ran"`
	Reason string `json:"reason,omitempty"`
	sweep.Numbers
	Bands *sweep.Bands `json:"bands,omitempty"`
}

// Rule is how predict ranks levers; ClosedRule for a client that sends as fast as it is
// answered, whose requests a second are what the pool gives it: more of them at the same tail
// is the pool doing more for it (a scaled-out pool reaching the client, say).
const (
	Rule       = "by p99 (within 25% counts as the same), then the hottest worker's busy share (within 5 points the same), then the reconnects a second it costs"
	ClosedRule = "by p99 (within 25% counts as the same), then the requests a second the closed-loop client gets (within 10% the same), then the hottest worker's busy share (within 5 points the same), then the reconnects a second it costs"
)

// Run runs the scenario under each lever and ranks them. It returns what finished when
// interrupted (with suite.ErrInterrupted).
func Run(ctx context.Context, o Options) (*Prediction, error) {
	info, err := o.Target.Info(ctx)
	if err != nil {
		return nil, err
	}
	eff, _ := o.Target.Resolve(o.Scenario)
	if o.Duration > 0 {
		eff.Load.Duration = stacks.Duration(o.Duration)
	}
	pods, workers := suite.PoolSize(info, eff)
	shape := ShapeOf(eff, pods, workers)
	// A sweep's report plots a knob's values on an axis; levers have none, and predict.json and
	// the table are predict's report.
	o.RunSettings.NoReport = true
	run := func(ls []Lever, settings suite.RunSettings, cmd string) (*sweep.Sweep, error) {
		variants := map[string]*stacks.Scenario{}
		var values []string
		for _, l := range ls {
			variants[l.Label] = l.sc
			values = append(values, l.Label)
		}
		return sweep.Run(ctx, sweep.Options{Target: o.Target, Scenario: o.Scenario, Variants: variants, Values: values, Paired: true,
			Command: cmd, Repeat: o.Repeat, Duration: o.Duration, RunSettings: settings})
	}
	var points []*sweep.Point
	var first *sweep.Sweep
	closedLoop := shape.RPS == 0
	if closedLoop {
		// A closed-loop client's rate is what the pool gives it: the scenario runs as it is
		// first, and count rotation is sized from the rate it measured.
		var err error
		first, err = run(Levers(o.Scenario, shape)[:1], o.RunSettings, "predict")
		if first == nil || err != nil {
			return nil, err
		}
		shape.RPS = first.Points[0].RPS
		points = append(points, first.Points[0])
	}
	levers := Levers(o.Scenario, shape)
	rest, settings, cmd := levers, o.RunSettings, "predict"
	if first != nil {
		// The other levers' runs go in a folder of their own inside the prediction's.
		rest, settings.OutDir, cmd = levers[1:], first.Dir, "levers"
	}
	sw, runErr := run(rest, settings, cmd)
	if sw == nil {
		return nil, runErr
	}
	points = append(points, sw.Points...)
	dir := sw.Dir
	if first != nil {
		dir = first.Dir
	}
	p := &Prediction{Scenario: o.Scenario.Name, Target: info.Name, Repeat: max(1, o.Repeat), Rule: Rule, Sweep: sw, Dir: dir}
	if closedLoop {
		p.Rule = ClosedRule
	}
	for i, l := range levers {
		pt := points[i]
		row := &Row{Lever: l, Numbers: pt.Numbers, Bands: pt.Bands, Ran: pt.Status == "ok", Reason: pt.Reason}
		if row.Bands != nil {
			row.BusyMax, row.P99Ms, row.DrainsPerS = row.Bands.HotWorker.Median, row.Bands.P99Ms.Median, row.Bands.DrainsPerS.Median
		}
		p.Rows = append(p.Rows, row)
	}
	p.rank(closedLoop)
	if err := measure.WriteJSON(filepath.Join(dir, "predict.json"), p); err != nil && runErr == nil {
		runErr = err
	}
	return p, runErr
}

// rank orders the rows (Rule), numbers them, and picks the lever to apply: the best-ranked
// one that beats the scenario as it is by a step of the rule.
func (p *Prediction) rank(closedLoop bool) {
	base := p.Rows[0]
	better := func(a, b *Row) bool { return better(a, b, closedLoop) }
	sort.SliceStable(p.Rows, func(i, j int) bool { return better(p.Rows[i], p.Rows[j]) })
	for i, r := range p.Rows {
		r.Rank = i + 1
	}
	if !base.Ran {
		p.Why = "the scenario as it is did not run (" + base.Reason + "): nothing to compare the levers with"
		return
	}
	for _, r := range p.Rows {
		if r == base || !r.Ran {
			continue
		}
		if better(r, base) {
			p.Best = r
		}
		break
	}
	if p.Best == nil {
		p.Why = fmt.Sprintf("no lever beats the scenario as it is (p99 %.1f ms, hottest worker %s) by a step of the rule: %s", base.P99Ms, pct(base.BusyMax), p.Rule)
		return
	}
	b := p.Best
	p.Why = fmt.Sprintf("%s: p99 %.1f ms against %.1f ms as it is, %.0f requests a second against %.0f, hottest worker %s against %s, %.2f reconnects a second against %.2f",
		b.What, b.P99Ms, base.P99Ms, b.RPS, base.RPS, pct(b.BusyMax), pct(base.BusyMax), b.cost(), base.cost())
	p.Expect = fmt.Sprintf("after applying %s: p99 near %.1f ms, the hottest worker near %s busy, connections spread with CV %.3f over %.0f connection(s) (%s)",
		b.Label, b.P99Ms, pct(b.BusyMax), b.CV, b.Connections, b.ChanceVerdict)
	if b.Bands != nil {
		p.Expect += fmt.Sprintf("; over %d placements the hottest worker ran %s..%s and p99 %.1f..%.1f ms", b.Bands.Placements,
			pct(b.Bands.HotWorker.P5), pct(b.Bands.HotWorker.P95), b.Bands.P99Ms.P5, b.Bands.P99Ms.P95)
	}
	if b.Knob == knobMaxRequests || b.Knob == knobMaxDuration {
		p.Expect += "; rotation moves a hot spot every few seconds, faster than a dashboard scraping every 15-30 s shows, so judge it by p99 and by igwlab diagnose --baseline, not by a per-pod CPU graph"
	}
}

// better ranks a before b: Rule, or ClosedRule for a closed-loop client.
func better(a, b *Row, closedLoop bool) bool {
	if a.Ran != b.Ran {
		return a.Ran
	}
	if apart(a.P99Ms, b.P99Ms, 1.25) {
		return a.P99Ms < b.P99Ms
	}
	if closedLoop && apart(a.RPS, b.RPS, 1.1) {
		return a.RPS > b.RPS
	}
	if math.Abs(a.BusyMax-b.BusyMax) > 0.05 {
		return a.BusyMax < b.BusyMax
	}
	return a.cost() < b.cost()
}

// apart says two positive numbers differ by more than ratio, the larger over the smaller.
func apart(a, b, ratio float64) bool {
	lo, hi := math.Min(a, b), math.Max(a, b)
	return lo > 0 && hi > ratio*lo
}

// cost is the reconnects a second a lever makes the clients pay: the connections the gateway
// drains (each a new connection, and a TLS handshake where TLS ends at the gateway).
func (r *Row) cost() float64 { return r.DrainsPerS }

func pct(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}
