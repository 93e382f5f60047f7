package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/stacks"
)

func ok(name string, f func(r *Result)) *Result {
	r := &Result{Name: name, Status: "ok"}
	f(r)
	return r
}

func byID(vs []Verdict) map[string]Verdict {
	m := map[string]Verdict{}
	for _, v := range vs {
		m[v.ID] = v
	}
	return m
}

func TestEvaluateCalls(t *testing.T) {
	base := map[string][]*Result{
		"01-baseline": {ok("01-baseline", func(r *Result) { r.CV, r.ConnectionsTotal = 0.22, 100 })},
		"02-trigger":  {ok("02-trigger", func(r *Result) { r.CV, r.ConnectionsTotal, r.P99Ms = 2.236, 1, 200 })},
		"02-fortio":   {ok("02-fortio", func(r *Result) { r.CV, r.ConnectionsTotal = 1.414, 2 })},
		"03-fortio":   {ok("03-fortio", func(r *Result) { r.CV, r.ConnectionsTotal = 1.414, 2 })},
		"04-fortio": {ok("04-fortio", func(r *Result) {
			r.CV, r.ConnectionsTotal, r.GoAways, r.MaxRequestsReached = 0.3, 45, 43, 180
		})},
		"05-windows":      {ok("05-windows", func(r *Result) {})},
		"12-grpc-variant": {ok("12-grpc-variant", func(r *Result) { r.CV, r.ConnectionsTotal = 2.2360679, 1 })},
		"09-hol-blocking": {ok("09-hol-blocking", func(r *Result) { r.P99Ms = 205 })},
	}
	cases := []struct {
		id, want string
		edit     func(m map[string][]*Result)
	}{
		{"H-A", Pass, nil},
		{"H-A", Investigate, func(m map[string][]*Result) { m["02-trigger"][0].CV = 0.4 }},
		{"H-B fortio", Confirmed, nil},
		{"H-B fortio", Unexpected, func(m map[string][]*Result) { m["03-fortio"][0].ConnectionsTotal = 5 }},
		{"H-C fortio", Confirmed, nil},
		{"H-C fortio", Partial, func(m map[string][]*Result) { m["04-fortio"][0].CV = 0.9 }},
		// Rotation is judged from Envoy's own counter and the growth of connections, not from a
		// count of drains a real gateway cannot give.
		{"H-C fortio", Investigate, func(m map[string][]*Result) { m["04-fortio"][0].MaxRequestsReached = 0 }},
		{"H-C fortio", Investigate, func(m map[string][]*Result) { m["04-fortio"][0].ConnectionsTotal = 2 }},
		{"H-C fortio", Confirmed, func(m map[string][]*Result) { m["04-fortio"][0].GoAways, m["04-fortio"][0].DrainsStarted = 0, 0 }},
		{"H-D", Refuted, nil},
		{"H-D", Pass, func(m map[string][]*Result) {
			m["02-trigger"][0].FlowControlPaused, m["05-windows"][0].FlowControlPaused = 100, 5
		}},
		// A handful of pauses is how fast the machine drained its sockets, not a bottleneck.
		{"H-D", Refuted, func(m map[string][]*Result) {
			m["02-trigger"][0].FlowControlPaused, m["02-trigger"][0].Requests = 4, 18000
		}},
		// Nor is a client that drained its socket slowly for a while: 02-trigger after
		// 01-baseline on two shared cores, with 05-windows pausing never.
		{"H-D", Refuted, func(m map[string][]*Result) {
			m["02-trigger"][0].FlowControlPaused, m["02-trigger"][0].Requests = 590, 17861
		}},
		// A bottleneck pauses on most requests, and the windows would take that away.
		{"H-D", Pass, func(m map[string][]*Result) {
			m["02-trigger"][0].FlowControlPaused, m["02-trigger"][0].Requests = 9000, 17861
			m["05-windows"][0].FlowControlPaused = 100
		}},
		{"S12", Confirmed, nil},
		{"S12", Investigate, func(m map[string][]*Result) { m["12-grpc-variant"][0].ConnectionsTotal = 2 }},
		{"S9", Refuted, nil},
		{"S9", Confirmed, func(m map[string][]*Result) { m["09-hol-blocking"][0].P50Ms = 400 }},
		{"H-E", Skipped, nil},
	}
	for _, c := range cases {
		runs := map[string][]*Result{}
		for k, v := range base {
			cp := *v[0]
			runs[k] = []*Result{&cp}
		}
		if c.edit != nil {
			c.edit(runs)
		}
		got := byID(Evaluate(runs, 6, feeds(t)))[c.id]
		if got.Verdict != c.want {
			t.Errorf("%s: %s (%s), want %s", c.id, got.Verdict, got.Detail, c.want)
		}
	}
}

func TestEvaluateRepeatsReportsAgreementAndSpread(t *testing.T) {
	mk := func(s2 float64) map[string]*Result {
		return map[string]*Result{
			"01-baseline": ok("01-baseline", func(r *Result) { r.CV = 0.25 }),
			"02-trigger":  ok("02-trigger", func(r *Result) { r.CV = s2 }),
		}
	}
	runs := map[string][]*Result{}
	for _, s2 := range []float64{2.236, 1.414, 0.4} {
		for k, v := range mk(s2) {
			runs[k] = append(runs[k], v)
		}
	}
	v := byID(Evaluate(runs, 6, feeds(t)))["H-A"]
	if v.Verdict != Pass || v.Runs != 3 || v.Agree != 2 || v.Confidence != "2 of 3 runs" {
		t.Fatalf("%+v", v)
	}
	if *v.RatioMin != 0.4/0.25 || *v.RatioMax != 2.236/0.25 || *v.Ratio != 1.414/0.25 {
		t.Fatalf("ratio %v [%v, %v]", *v.Ratio, *v.RatioMin, *v.RatioMax)
	}
	var b bytes.Buffer
	WriteBlock(&b, Header{Target: "local", Pods: 6, Concurrency: 1, Repeat: 3}, Evaluate(runs, 6, feeds(t)))
	if !strings.Contains(b.String(), "PASS (2 of 3 runs)") {
		t.Fatalf("block:\n%s", b.String())
	}
	if _, err := json.Marshal(Evaluate(runs, 6, feeds(t))); err != nil {
		t.Fatalf("verdicts do not encode: %v", err)
	}
}

func TestEvaluateNeverEmitsInfinity(t *testing.T) {
	runs := map[string][]*Result{
		"01-baseline": {ok("01-baseline", func(r *Result) { r.CV = 0 })},
		"02-trigger":  {ok("02-trigger", func(r *Result) { r.CV = 2.236 })},
	}
	if _, err := json.Marshal(Evaluate(runs, 6, feeds(t))); err != nil {
		t.Fatal(err)
	}
}

// feeds is the built-in catalog's map of calls, roles and scenarios.
func feeds(t *testing.T) stacks.Feeds {
	t.Helper()
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat.Feeds()
}

// TestEveryRoleIsFed: the built-in catalog feeds every role of every check, with a scenario
// that exists, and feeds no call or role that no check asks for.
func TestEveryRoleIsFed(t *testing.T) {
	cat, _ := stacks.Builtin()
	f := cat.Feeds()
	asked := map[string]map[string]bool{}
	for _, c := range checks {
		asked[c.id] = map[string]bool{}
		for _, role := range c.roles {
			asked[c.id][role] = true
			name := f.Scenario(c.id, role)
			if _, ok := cat.Get(name); !ok {
				t.Errorf("%s: no scenario feeds role %q", c.id, role)
			}
		}
	}
	for call, roles := range f {
		for role, name := range roles {
			if !asked[call][role] {
				t.Errorf("%s feeds call %q as %q, which no check asks for", name, call, role)
			}
		}
	}
	v := byID(Evaluate(map[string][]*Result{}, 6, stacks.Feeds{}))["H-A"]
	if v.Verdict != Skipped || !strings.Contains(v.Detail, "feeds this call as baseline, trigger") {
		t.Errorf("a call no scenario feeds: %+v", v)
	}
}
