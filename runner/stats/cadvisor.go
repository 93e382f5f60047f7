package stats

// A kubelet's /metrics/cadvisor, as cAdvisor names its container metrics (metrics/prometheus.go):
// the CPU a gateway pod's proxy container used, its CPU limit as the CFS quota it runs under,
// and how often the kernel held it to that quota. cAdvisor exports the CFS counters only for a
// container with a quota.

// ProxyContainer is the container Envoy runs in on an Istio gateway pod.
const ProxyContainer = "istio-proxy"

// CPU is one pod's proxy container as cAdvisor reports it.
type CPU struct {
	Pod string `json:"pod"`
	// UsageS is container_cpu_usage_seconds_total: CPU seconds used.
	UsageS float64 `json:"usage_s"`
	// Periods, Throttled and ThrottledS are the CFS counters: enforcement periods in which the
	// container ran, those at whose end it was still held back, and the time its threads
	// spent held back (summed over threads).
	Periods    float64 `json:"cfs_periods"`
	Throttled  float64 `json:"cfs_throttled_periods"`
	ThrottledS float64 `json:"cfs_throttled_s"`
	// LimitCores is the quota over the period (container_spec_cpu_quota over
	// container_spec_cpu_period): the CPU limit; 0 without one.
	LimitCores float64 `json:"limit_cores,omitempty"`
	// Limited says the container has a quota: the CFS counters are there.
	Limited bool `json:"limited"`
}

// ContainerCPU reads every pod's proxy container from a kubelet's /metrics/cadvisor page, by
// pod name. A page read through Prometheus carries the same names and labels.
func ContainerCPU(s Snapshot) map[string]CPU {
	out := map[string]CPU{}
	for pod := range s.LabelValues("container_cpu_usage_seconds_total", "pod") {
		if pod == "" {
			continue
		}
		want := Labels{"pod": pod, "container": ProxyContainer}
		if !s.Has("container_cpu_usage_seconds_total", want) {
			continue
		}
		c := CPU{Pod: pod, UsageS: s.Sum("container_cpu_usage_seconds_total", want)}
		if s.Has("container_cpu_cfs_periods_total", want) {
			c.Limited = true
			c.Periods = s.Sum("container_cpu_cfs_periods_total", want)
			c.Throttled = s.Sum("container_cpu_cfs_throttled_periods_total", want)
			c.ThrottledS = s.Sum("container_cpu_cfs_throttled_seconds_total", want)
		}
		if p := s.Sum("container_spec_cpu_period", want); p > 0 {
			c.LimitCores = s.Sum("container_spec_cpu_quota", want) / p
		}
		out[pod] = c
	}
	return out
}

// CPUDelta is what a container did between two readings: counters subtract (a counter that
// went down means a new container, whose reading is the whole window), the limit is the later.
func CPUDelta(pre, post CPU) CPU {
	d := post
	if post.UsageS < pre.UsageS || post.Periods < pre.Periods {
		return d
	}
	d.UsageS -= pre.UsageS
	d.Periods -= pre.Periods
	d.Throttled -= pre.Throttled
	d.ThrottledS -= pre.ThrottledS
	return d
}
