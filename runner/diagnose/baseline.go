package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Change is what moved between a baseline (an earlier diagnose --json) and now: the knobs in
// force, the connections and their spread against chance, the hot pod, and the reconnects the
// pool pays, with a sentence saying whether the change moved what it was meant to move.
type Change struct {
	File string `json:"file"`
	// Knobs are the knobs in force that differ ("path: before -> now"); none read on one side
	// leaves it empty with KnobsUnread set.
	Knobs       []string `json:"knobs,omitempty"`
	KnobsUnread bool     `json:"knobs_unread,omitempty"`
	Rows        []Moved  `json:"rows"`
	// Moved says whether the spread moved beyond what chance alone moves it.
	Moved   bool   `json:"moved"`
	Verdict string `json:"verdict"`
	// Warning is said when hot spots now move faster than the source samples them.
	Warning string `json:"warning,omitempty"`
}

// Moved is one measure then and now.
type Moved struct {
	What   string  `json:"what"`
	Before float64 `json:"before"`
	Now    float64 `json:"now"`
	Unit   string  `json:"unit,omitempty"`
}

// scrapeInterval is the sampling interval assumed for a dashboard (Prometheus' common 15-30 s
// scrape, and rate() windows of a few of them): hot spots that move faster average away.
const scrapeIntervalS = 30

// ReadBaseline reads an earlier diagnose --json output.
func ReadBaseline(file string) (*Report, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("--baseline %s: not diagnose --json output: %v", file, err)
	}
	switch {
	case r.Verdict == "":
		return nil, fmt.Errorf("--baseline %s: field verdict is missing: not diagnose --json output", file)
	case len(r.Pods) == 0:
		return nil, fmt.Errorf("--baseline %s: field pods is empty: the baseline read no gateway pod", file)
	}
	return &r, nil
}

// Compare says what moved from before to now. It refuses a baseline of another gateway: other
// stat names for its traffic, or pods of another Deployment.
func Compare(file string, before, now *Report) (*Change, error) {
	for _, f := range []string{"hcm_prefix", "listener"} {
		if b, n := before.Names[f], now.Names[f]; b != n && b != "" && n != "" {
			return nil, fmt.Errorf("--baseline %s: field names.%s is %q there and %q here: a baseline from another gateway (or another listener of it)", file, f, b, n)
		}
	}
	if !sharesDeployment(before, now) {
		return nil, fmt.Errorf("--baseline %s: field pods names %s; none is of the Deployment of the pods read now (%s): a baseline from another gateway", file, podNames(before), podNames(now))
	}
	c := &Change{File: file}
	if before.InForce == nil || now.InForce == nil {
		c.KnobsUnread = true
	} else {
		c.Knobs = knobChanges(before.InForce, now.InForce)
	}
	perS := func(r *Report, v float64) float64 {
		if r.SpanS <= 0 {
			return 0
		}
		return v / r.SpanS
	}
	drains := func(r *Report) float64 { return r.Rotation.MaxRequestsReached + r.Rotation.MaxDurationReached }
	c.Rows = []Moved{
		{What: "connections seen", Before: before.Connections, Now: now.Connections},
		{What: "connection CV across pods", Before: before.CVConnections, Now: now.CVConnections},
		{What: "chance band's upper edge", Before: chanceHi(before), Now: chanceHi(now)},
		{What: before.LoadUnit + " CV across pods", Before: before.CVRequests, Now: now.CVRequests},
		{What: "hot pod's share", Before: 100 * before.HotPart, Now: 100 * now.HotPart, Unit: "%"},
		{What: "connections opened (reconnects, TLS handshakes where TLS ends at the gateway)", Before: perS(before, before.ConnectionsOpened), Now: perS(now, now.ConnectionsOpened), Unit: "/s"},
		{What: "connections drained by rotation", Before: perS(before, drains(before)), Now: perS(now, drains(now)), Unit: "/s"},
	}
	c.judge(before, now)
	return c, nil
}

// judge says whether the spread moved: the load's CV across pods fell by a third or more, or
// the connections' verdict against chance got better.
func (c *Change) judge(before, now *Report) {
	rank := map[string]int{"more concentrated than chance": 2, "within chance": 1, "more even than chance": 0}
	bv, bok := rank[before.ChanceVerdict]
	nv, nok := rank[now.ChanceVerdict]
	fell := before.CVRequests > 0 && now.CVRequests <= before.CVRequests*2/3
	rose := now.CVRequests > 0 && now.CVRequests >= before.CVRequests*3/2 && now.CVRequests-before.CVRequests > 0.1
	reconnects := fmt.Sprintf("%.2f reconnects a second now against %.2f", c.Rows[5].Now, c.Rows[5].Before)
	changed := len(c.Knobs) > 0
	switch {
	case fell || bok && nok && nv < bv:
		c.Moved = true
		c.Verdict = fmt.Sprintf("the spread moved: %s CV across pods %.3f -> %.3f, connections %s -> %s, at %s", now.LoadUnit, before.CVRequests, now.CVRequests,
			orNone(before.ChanceVerdict), orNone(now.ChanceVerdict), reconnects)
	case rose || bok && nok && nv > bv:
		c.Moved = true
		c.Verdict = fmt.Sprintf("the spread got worse: %s CV across pods %.3f -> %.3f, connections %s -> %s", now.LoadUnit, before.CVRequests, now.CVRequests,
			orNone(before.ChanceVerdict), orNone(now.ChanceVerdict))
	case changed:
		c.Verdict = fmt.Sprintf("the knobs changed (%s) and the spread did not move: %s CV across pods %.3f -> %.3f, connections %s both times; %s",
			strings.Join(c.Knobs, "; "), now.LoadUnit, before.CVRequests, now.CVRequests, orNone(now.ChanceVerdict), reconnects)
	default:
		c.Verdict = fmt.Sprintf("nothing changed: the same knobs in force%s, %s CV across pods %.3f -> %.3f, connections %s both times",
			unreadNote(c.KnobsUnread), now.LoadUnit, before.CVRequests, now.CVRequests, orNone(now.ChanceVerdict))
	}
	if life := now.ClosedLifetimeP50 / 1000; rotating(now.InForce, now.Rotation) && life > 0 && life < scrapeIntervalS {
		c.Warning = fmt.Sprintf("connections now live about %.0f s (p50) before rotation closes them, shorter than a dashboard's %d s sampling: a hot pod or worker moves before a graph shows it, so a flat per-pod CPU graph does not prove the load is even; judge by the spread above and by p99", life, scrapeIntervalS)
	}
}

func knobChanges(before, now *InForce) []string {
	val := func(f *InForce) map[string]string {
		m := map[string]string{}
		for _, k := range f.Knobs {
			m[k.Path] = k.Value
		}
		return m
	}
	b, n := val(before), val(now)
	var out []string
	for _, path := range slices.Sorted(mapsKeys(b, n)) {
		if b[path] != n[path] {
			out = append(out, fmt.Sprintf("%s: %s -> %s", path, orNone(b[path]), orNone(n[path])))
		}
	}
	return out
}

func mapsKeys(ms ...map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

// sharesDeployment says whether the two reports read pods of one Deployment: a pod's name less
// its ReplicaSet hash and its own suffix (istio-ingressgateway-5d8f7c9b6d-rrvqd ->
// istio-ingressgateway). Names with fewer parts are compared whole.
func sharesDeployment(a, b *Report) bool {
	deps := map[string]bool{}
	for _, p := range a.Pods {
		deps[deployment(p.Name)] = true
	}
	for _, p := range b.Pods {
		if deps[deployment(p.Name)] {
			return true
		}
	}
	return false
}

func deployment(pod string) string {
	parts := strings.Split(pod, "-")
	if len(parts) < 3 {
		return pod
	}
	return strings.Join(parts[:len(parts)-2], "-")
}

func podNames(r *Report) string {
	var names []string
	for _, p := range r.Pods {
		names = append(names, p.Name)
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
	}
	return strings.Join(names, ", ")
}

func chanceHi(r *Report) float64 {
	if r.Chance == nil {
		return 0 // no band: too few pods or connections to draw one
	}
	return r.Chance.Hi
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func unreadNote(unread bool) string {
	if unread {
		return " (as far as the stats show: /config_dump was not read on both sides)"
	}
	return ""
}
