package model

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The gateway pods' node: what its kubelet serves on /metrics/cadvisor for their istio-proxy
// containers, as cAdvisor names it (metrics/prometheus.go): the CPU they used
// (container_cpu_usage_seconds_total: the workers' busy time), their resources
// (container_spec_cpu_quota and _period in microseconds, container_spec_cpu_shares), and under
// a CPU limit the CFS counters, which cAdvisor exports only for a container with a quota
// (container_cpu_cfs_periods_total, container_cpu_cfs_throttled_periods_total,
// container_cpu_cfs_throttled_seconds_total). The runner reads them as it reads a cluster's
// kubelets, and diagnose as Prometheus scrapes them.

// Kubelet labels of the gateway's containers.
const (
	GatewayNamespace = "istio-ingress"
	ProxyContainer   = "istio-proxy"
	ProxyImage       = "igwlab/emulated-proxyv2"
)

// Container is one running istio-proxy container as cAdvisor reads it.
type Container struct {
	Pod   string
	Busy  time.Duration // the CPU its workers used
	Quota *Quota        // its CFS quota; nil: no limit
}

// CAdvisor collects the containers' metrics at a time (the pool's clock).
type CAdvisor struct {
	Containers func() []Container
	Now        func() time.Time
}

// Describe implements prometheus.Collector.
func (CAdvisor) Describe(chan<- *prometheus.Desc) {} // unchecked: pods come and go

var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// Collect implements prometheus.Collector.
func (c CAdvisor) Collect(ch chan<- prometheus.Metric) {
	desc := func(name string) *prometheus.Desc { return prometheus.NewDesc(name, "", cadvisorLabels, nil) }
	for _, k := range c.Containers() {
		vals := []string{ProxyContainer, "/kubepods/pod-" + k.Pod + "/" + ProxyContainer, ProxyImage, k.Pod + "_" + ProxyContainer, GatewayNamespace, k.Pod}
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_usage_seconds_total"), prometheus.CounterValue, k.Busy.Seconds(), vals...)
		q := k.Quota
		if q == nil {
			continue
		}
		st := q.Stats(c.Now())
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_period"), prometheus.GaugeValue, float64(q.Period.Microseconds()), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_quota"), prometheus.GaugeValue, float64(q.Quota.Microseconds()), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_shares"), prometheus.GaugeValue, float64(CPUShares(q.RequestMilli)), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_periods_total"), prometheus.CounterValue, float64(st.Periods), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_throttled_periods_total"), prometheus.CounterValue, float64(st.Throttled), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_throttled_seconds_total"), prometheus.CounterValue, st.ThrottledTime.Seconds(), vals...)
	}
}

// CPUShares is the kubelet's cpu.shares for a request in millicores (pkg/kubelet/cm
// MilliCPUToShares).
func CPUShares(milli int64) int64 {
	if milli == 0 {
		return 2
	}
	return min(max(milli*1024/1000, 2), 262144)
}
