package emulator

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	proxyImage       = "igwlab/emulated-proxyv2"
	// NodeName is the node the local gateway pods run on.
	NodeName = "igwlab-local"
)

type kubelet struct {
	srv *http.Server
	ln  net.Listener
}

func (p *Pool) startKubelet() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(cadvisorCollector{p})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	p.kubelet = &kubelet{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = p.kubelet.srv.Serve(ln) }()
	return nil
}

func (k *kubelet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = k.srv.Shutdown(ctx)
}

// KubeletURL is the base URL of the gateway pods' node's kubelet (its /metrics/cadvisor).
func (p *Pool) KubeletURL() string { return "http://" + p.kubelet.ln.Addr().String() }

type cadvisorCollector struct{ p *Pool }

func (cadvisorCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: pods come and go

var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

func (c cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	desc := func(name string) *prometheus.Desc { return prometheus.NewDesc(name, "", cadvisorLabels, nil) }
	for _, pod := range c.p.gateway {
		if !pod.Up() {
			continue // no container: cAdvisor has no cgroup to read
		}
		pod.mu.Lock()
		ws, q := pod.workers, pod.quota
		pod.mu.Unlock()
		vals := []string{ProxyContainer, "/kubepods/pod-" + pod.Name + "/" + ProxyContainer, proxyImage, pod.Name + "_" + ProxyContainer, GatewayNamespace, pod.Name}
		var busy time.Duration
		for _, w := range ws {
			busy += w.Busy()
		}
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_usage_seconds_total"), prometheus.CounterValue, busy.Seconds(), vals...)
		if q == nil {
			continue
		}
		st := q.Stats(time.Now())
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_period"), prometheus.GaugeValue, float64(q.Period.Microseconds()), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_quota"), prometheus.GaugeValue, float64(q.Quota.Microseconds()), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_spec_cpu_shares"), prometheus.GaugeValue, float64(cpuShares(q.RequestMilli)), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_periods_total"), prometheus.CounterValue, float64(st.Periods), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_throttled_periods_total"), prometheus.CounterValue, float64(st.Throttled), vals...)
		ch <- prometheus.MustNewConstMetric(desc("container_cpu_cfs_throttled_seconds_total"), prometheus.CounterValue, st.ThrottledTime.Seconds(), vals...)
	}
}

// cpuShares is the kubelet's cpu.shares for a request in millicores (MilliCPUToShares).
func cpuShares(milli int64) int64 {
	if milli == 0 {
		return 2
	}
	return min(max(milli*1024/1000, 2), 262144)
}
