package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// WorkersAxis is the name a sweep of Envoy's workers per pod goes by, in place of a knob path:
// the scenario's pool.concurrency, a pod template change on every target (the pods restart).
const WorkersAxis = "pool.concurrency"

// maxThrottledShare is the most throttled periods a worker count may show to count as not
// throttled: a stray period is the period timer's, not the workers'.
const maxThrottledShare = 0.01

// ParseWorkers reads a concurrency sweep's values: a,b,c or the log range lo..hixF, each a
// worker count Envoy's pods take, none twice.
func ParseWorkers(text string) ([]string, error) {
	allowed := fmt.Sprintf("1..%d Envoy workers per pod", stacks.MaxConcurrency)
	raw, err := stacks.ListValues(WorkersAxis, text, true, allowed)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %q is not a whole number of workers: allowed %s", WorkersAxis, v, allowed)
		case n < 1 || n > stacks.MaxConcurrency:
			return nil, fmt.Errorf("%s: %d is out of range: allowed %s", WorkersAxis, n, allowed)
		case seen[n]:
			return nil, fmt.Errorf("%s: value %d is listed twice", WorkersAxis, n)
		}
		seen[n] = true
		out = append(out, strconv.Itoa(n))
	}
	return out, nil
}

// withWorkers is the scenario with its pods' workers set to v on every target, under limit
// (millicores, 0: the scenario's own) when the scenario names none.
func withWorkers(sc *stacks.Scenario, v string, limit stacks.CPU) *stacks.Scenario {
	out := sc.Lab()
	out.Pool.Concurrency, _ = strconv.Atoi(v)
	out.Local.Pool.Concurrency = 0
	if out.Pool.CPULimit == 0 && out.Local.Pool.CPULimit == 0 {
		out.Pool.CPULimit = limit
	}
	return &out
}

// WorkersRule states how a worker count is chosen.
func WorkersRule(limit stacks.CPU) string {
	return fmt.Sprintf("the worker count with the lowest p99 among those whose pods were not throttled (at most %.0f%% of CFS periods, "+
		"container_cpu_cfs_throttled_periods_total over container_cpu_cfs_periods_total) under the CPU limit of %s cores; "+
		"ties go to fewer workers; with --repeat, a count qualifies when more than half of its runs do, and the numbers are its median run's",
		100*maxThrottledShare, limit)
}

// recommendWorkers picks the worker count for the limit: throttled counts hold requests back
// a period at a time, fewer workers than cores leave cores idle that a busy pod could use.
func recommendWorkers(sw *Sweep, limit stacks.CPU) *Recommendation {
	rec := &Recommendation{Rule: WorkersRule(limit)}
	var best *Point
	var bestAgree []string
	for _, p := range sw.Points {
		if p.Status != analysis.StatusOK {
			continue
		}
		runs := p.runsOf()
		var agree []string
		for i, n := range runs {
			if n.Status == analysis.StatusOK && n.Limited && n.ThrottledShare <= maxThrottledShare {
				agree = append(agree, fmt.Sprintf("%s run %d: p99 %.1f ms, throttled in %.0f%% of periods, %.2f cores used", p.Dir, i+1, n.P99Ms, 100*n.ThrottledShare, n.UsageCores))
			}
		}
		if 2*len(agree) <= len(runs) {
			continue
		}
		w, _ := strconv.Atoi(p.Value)
		bw := 0
		if best != nil {
			bw, _ = strconv.Atoi(best.Value)
		}
		if best == nil || p.P99Ms < best.P99Ms || p.P99Ms == best.P99Ms && w < bw {
			best, bestAgree = p, agree
		}
	}
	if best == nil {
		rec.Why = fmt.Sprintf("no worker count ran unthrottled under the CPU limit of %s cores (or the target reported no CFS counters): try counts at or below the limit's cores", limit)
		return rec
	}
	rec.Value, rec.Agree = best.Value, bestAgree
	rec.Why = fmt.Sprintf("%s=%s: p99 %.1f ms, %.0f rps, throttled in %.0f%% of periods, %.2f cores used, under a CPU limit of %s cores",
		WorkersAxis, best.Value, best.P99Ms, best.RPS, 100*best.ThrottledShare, best.UsageCores, limit)
	var others []string
	for _, p := range sw.Points {
		if p.Status == analysis.StatusOK && p != best {
			others = append(others, fmt.Sprintf("%s worker(s): p99 %.1f ms, throttled in %.0f%% of periods", p.Value, p.P99Ms, 100*p.ThrottledShare))
		}
	}
	if len(others) > 0 {
		rec.Why += "; " + strings.Join(others, ", ")
	}
	rec.Preview = fmt.Sprintf("pulumi config set --stack lab igwlab:proxyConcurrency %s && pulumi up --stack lab (a new pod template: the gateway's pods restart); "+
		"with no concurrency in proxy.istio.io/config, Istio's own default takes it from the CPU limit, rounded up (ISTIO_CPU_LIMIT)", best.Value)
	return rec
}
