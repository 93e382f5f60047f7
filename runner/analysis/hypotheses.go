package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/igwlab/igwlab/internal/argmax"
	"github.com/igwlab/igwlab/stacks"
)

// Verdict is one hypothesis' call, with the numbers behind it.
type Verdict struct {
	ID         string             `json:"id"`
	Title      string             `json:"title"`
	Verdict    string             `json:"verdict"`
	Ratio      *float64           `json:"ratio,omitempty"`
	RatioName  string             `json:"ratio_name,omitempty"`
	Numbers    map[string]float64 `json:"numbers,omitempty"`
	Detail     string             `json:"detail"`
	Scenarios  []string           `json:"scenarios"`
	Runs       int                `json:"runs"`
	Agree      int                `json:"agree"`
	Confidence string             `json:"confidence,omitempty"`
	RatioMin   *float64           `json:"ratio_min,omitempty"`
	RatioMax   *float64           `json:"ratio_max,omitempty"`
	// Disturbed names the scenarios behind this call that a fault hit while they ran (a pod
	// killed or restarted, a worker stuck): the call stands on disturbed numbers.
	Disturbed []string `json:"disturbed,omitempty"`
}

// Verdict words.
const (
	Pass         = "PASS"
	Confirmed    = "CONFIRMED"
	Partial      = "PARTIAL"
	Refuted      = "REFUTED"
	Investigate  = "INVESTIGATE"
	Inconclusive = "INCONCLUSIVE"
	Skipped      = "SKIPPED"
	Negligible   = "NEGLIGIBLE"
	Significant  = "SIGNIFICANT"
	Unexpected   = "UNEXPECTED"
)

// lookup returns the result, in one repetition, of the scenario that feeds the check in a
// role, or nil.
type lookup func(role string) *Result

// check is one call: it asks for the scenarios that feed it by role (the catalog's feeds say
// which scenario that is), never by name.
type check struct {
	id, title string
	roles     []string
	eval      func(get lookup, pods int) (verdict string, ratio float64, ratioName string, nums map[string]float64, detail string)
}

// Evaluate makes every hypothesis call. runs holds, per scenario, one result per repetition;
// feeds says which scenario feeds each call in each role (the catalog's). With several
// repetitions each is judged on its own; the verdict is the most common call and its
// confidence says how many runs agree; ratios are reported as median and range.
func Evaluate(runs map[string][]*Result, pods int, feeds stacks.Feeds) []Verdict {
	reps := 0
	for _, rs := range runs {
		reps = max(reps, len(rs))
	}
	var out []Verdict
	for _, c := range checks {
		needs := make([]string, len(c.roles))
		byRole := map[string]string{}
		var unfed []string
		for i, role := range c.roles {
			needs[i] = feeds.Scenario(c.id, role)
			byRole[role] = needs[i]
			if needs[i] == "" {
				unfed = append(unfed, role)
			}
		}
		v := Verdict{ID: c.id, Title: c.title, Scenarios: needs}
		if len(unfed) > 0 {
			v.Verdict, v.Scenarios = Skipped, nil
			v.Detail = fmt.Sprintf("no scenario of the catalog feeds this call as %s", strings.Join(unfed, ", "))
			out = append(out, v)
			continue
		}
		missing := []string{}
		for _, n := range needs {
			if !ran(runs[n]) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			v.Verdict = Skipped
			v.Detail = "not in this run: " + strings.Join(missing, ", ")
			for _, n := range missing {
				if rs := runs[n]; len(rs) > 0 && rs[0].Reason != "" {
					v.Detail = n + " " + string(rs[0].Status) + ": " + rs[0].Reason
				}
			}
			out = append(out, v)
			continue
		}
		calls := map[string]int{}
		var ratios []float64
		var last struct {
			nums   map[string]float64
			detail string
			name   string
		}
		details := map[string]string{}
		for i := 0; i < reps; i++ {
			get := func(role string) *Result {
				rs := runs[byRole[role]]
				if i < len(rs) && rs[i].OK() {
					return rs[i]
				}
				return nil
			}
			complete := true
			for _, role := range c.roles {
				complete = complete && get(role) != nil
			}
			if !complete {
				continue
			}
			for _, role := range c.roles {
				if n := byRole[role]; get(role).Disturbed && !slices.Contains(v.Disturbed, n) {
					v.Disturbed = append(v.Disturbed, n)
				}
			}
			verdict, ratio, name, nums, detail := c.eval(get, pods)
			for k, x := range nums {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					delete(nums, k) // JSON has no NaN or infinity; an undefined number is left out
				}
			}
			calls[verdict]++
			details[verdict] = detail
			if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
				ratios = append(ratios, ratio)
			}
			last.nums, last.detail, last.name = nums, detail, name
			v.Runs++
		}
		v.Verdict = majority(calls)
		v.Agree = calls[v.Verdict]
		v.Numbers, v.RatioName = last.nums, last.name
		v.Detail = details[v.Verdict]
		if len(ratios) > 0 {
			m := Median(ratios)
			v.Ratio = &m
			if len(ratios) > 1 {
				lo, hi := MinMax(ratios)
				v.RatioMin, v.RatioMax = &lo, &hi
			}
		}
		if v.Runs > 1 {
			v.Confidence = fmt.Sprintf("%d of %d runs", v.Agree, v.Runs)
		}
		out = append(out, v)
	}
	return out
}

// CheckTitle is the title the evaluation block prints for the call id; false for no such call.
func CheckTitle(id string) (string, bool) {
	for _, c := range checks {
		if c.id == id {
			return c.title, true
		}
	}
	return "", false
}

// CheckIDs lists the calls in the order the evaluation block prints them.
func CheckIDs() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.id
	}
	return out
}

func ran(rs []*Result) bool {
	for _, r := range rs {
		if r.OK() {
			return true
		}
	}
	return false
}

// majority is the most common call, the first in alphabetical order on a tie.
func majority(calls map[string]int) string {
	if v, ok := argmax.Key(calls, nil); ok {
		return v
	}
	return Inconclusive
}

func ratioOf(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

func cvText(r *Result) string {
	s := fmt.Sprintf("CV %.3f (k=%d", r.CV, int(r.ConnectionsTotal))
	if r.Chance != nil {
		s += ", " + r.ChanceVerdict
	}
	return s + ")"
}
