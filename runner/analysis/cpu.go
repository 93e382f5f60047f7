package analysis

import (
	"fmt"
	"sort"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// CPUUse is what the gateway pods' proxy containers used in the window and how the kernel held
// them to their CPU limit, from the kubelets' cAdvisor metrics: the stats of a cluster's
// nodes, which a real gateway's own stats do not carry.
type CPUUse struct {
	// LimitCores is the pods' CPU limit (the largest, if they differ); 0 without one. Workers
	// is their Envoy workers (server.concurrency), the most of any pod.
	LimitCores float64 `json:"limit_cores,omitempty"`
	Workers    int     `json:"workers,omitempty"`
	// UsageCores is the CPU they used, per second of the window, summed over pods; HotPod the
	// pod that used the most, and its cores.
	UsageCores float64 `json:"usage_cores"`
	HotPod     string  `json:"hot_pod,omitempty"`
	HotCores   float64 `json:"hot_pod_cores,omitempty"`
	// Periods, Throttled and ThrottledS are the CFS counters summed over pods; ThrottledShare
	// is Throttled over Periods (cAdvisor's container_cpu_cfs_throttled_periods_total over
	// container_cpu_cfs_periods_total, the ratio throttling alerts use).
	Periods        float64 `json:"cfs_periods"`
	Throttled      float64 `json:"cfs_throttled_periods"`
	ThrottledS     float64 `json:"cfs_throttled_s"`
	ThrottledShare float64 `json:"throttled_share"`
	// Limited says the containers have a quota (the CFS counters exist).
	Limited bool `json:"limited"`
}

// cpuUse sums the proxy containers' CPU over the window; nil where nothing was read.
func cpuUse(pre, post map[string]stats.CPU, pods []stats.Pod, window time.Duration) *CPUUse {
	if len(post) == 0 {
		return nil
	}
	u := &CPUUse{}
	names := make([]string, 0, len(post))
	for n := range post {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := stats.CPUDelta(pre[n], post[n])
		u.Periods += d.Periods
		u.Throttled += d.Throttled
		u.ThrottledS += d.ThrottledS
		u.Limited = u.Limited || d.Limited
		u.LimitCores = max(u.LimitCores, d.LimitCores)
		if window > 0 {
			cores := d.UsageS / window.Seconds()
			u.UsageCores += cores
			if cores > u.HotCores {
				u.HotPod, u.HotCores = n, cores
			}
		}
	}
	for _, p := range pods {
		u.Workers = max(u.Workers, int(p.Concurrency))
	}
	u.ThrottledShare = ratioOf(u.Throttled, u.Periods)
	if u.Periods == 0 {
		u.ThrottledShare = 0
	}
	return u
}

// Text is the use in a line: "1.98 cores used by 8 workers under a limit of 2 (throttled in 83%
// of periods, 3.1 s held back)".
func (u *CPUUse) Text() string {
	s := fmt.Sprintf("%.2f cores used", u.UsageCores)
	if u.Workers > 0 {
		s += fmt.Sprintf(" by %d worker(s) per pod", u.Workers)
	}
	if !u.Limited {
		return s + " with no CPU limit"
	}
	return s + fmt.Sprintf(" under a limit of %g cores per pod: throttled in %.0f%% of periods (%d of %d), threads held back %.1f s in all",
		u.LimitCores, 100*u.ThrottledShare, int(u.Throttled), int(u.Periods), u.ThrottledS)
}
