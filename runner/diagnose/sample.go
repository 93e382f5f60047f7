package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// Admins reaches gateway pods' Envoy admins by pod name: by base URL for the admin source,
// through a port-forward for the Kubernetes source. Finding the pods is the source's own step.
type Admins interface {
	Get(ctx context.Context, pod, path string) ([]byte, error)
}

// CAdvisor reads the cAdvisor metrics of the gateway pods' nodes (their kubelets'
// /metrics/cadvisor): each page a snapshot.
type CAdvisor interface {
	Pages(ctx context.Context) ([]stats.Snapshot, error)
}

// Sample reads each pod's /stats/prometheus (and, with cpu, its node's cAdvisor metrics),
// waits d, and reads them again; then each pod's /config_dump for what is in force (a pod that
// will not give it is named in Missing). source names where the pods came from, for the
// report.
func Sample(ctx context.Context, source string, pods []string, a Admins, d time.Duration, cpu CAdvisor, pick stats.Pick) (*Window, error) {
	start := time.Now()
	cpuPre, cpuErr := cpuPages(ctx, cpu)
	pre, err := readAll(ctx, pods, a)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	post, err := readAll(ctx, pods, a)
	if err != nil {
		return nil, err
	}
	w, err := windowFrom(source, pre, post, time.Since(start), pick)
	if err != nil {
		return nil, err
	}
	if still(w.Pods) {
		// The readings are the counters themselves (Prometheus gives increases instead).
		w.sinceStart()
	}
	if cpu != nil {
		cpuPost, err := cpuPages(ctx, cpu)
		if err = errors.Join(cpuErr, err); err != nil {
			w.Missing = append(w.Missing, "the nodes' cAdvisor metrics (a kubelet's /metrics/cadvisor): "+err.Error()+": CPU limits and throttling not read")
		} else {
			w.setCPU(cpuPre, cpuPost)
		}
	}
	w.Start, w.End = start, time.Now()
	// The worker count is /server_info's (command_line_options.concurrency) where the stats
	// lack server.concurrency, and each pod's workers are what its CPU limit is judged against.
	for i := range w.Pods {
		if p := &w.Pods[i]; p.Post.Concurrency == 0 {
			if raw, err := a.Get(ctx, p.Name, "/server_info"); err == nil {
				if si, err := stats.ParseServerInfo(raw); err == nil && si.Concurrency > 0 {
					p.Workers = si.Concurrency
				}
			}
		}
	}
	var dumps []podConfig
	for _, pod := range pods {
		dump, err := a.Get(ctx, pod, "/config_dump")
		if err != nil {
			w.Missing = append(w.Missing, fmt.Sprintf("%s /config_dump: %v", pod, err))
			continue
		}
		c, err := stats.ReadInForce(dump, w.Names.HCMPrefix)
		if err != nil {
			w.Missing = append(w.Missing, pod+": "+err.Error())
			continue
		}
		dumps = append(dumps, podConfig{pod, c})
	}
	if w.InForce, err = inForce(dumps); err != nil {
		return nil, err
	}
	return w, nil
}

func cpuPages(ctx context.Context, c CAdvisor) (map[string]stats.CPU, error) {
	if c == nil {
		return nil, nil
	}
	pages, err := c.Pages(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]stats.CPU{}
	for _, p := range pages {
		for pod, v := range stats.ContainerCPU(p) {
			out[pod] = v
		}
	}
	return out, nil
}

// readAll reads every pod's stats at once, so the readings are one moment of the pool.
func readAll(ctx context.Context, pods []string, a Admins) ([]stats.Snapshot, error) {
	out := make([]stats.Snapshot, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := a.Get(ctx, pod, "/stats/prometheus")
			if err != nil {
				errs[i] = err
				return
			}
			out[i], errs[i] = stats.ParseSnapshot(pod, time.Now(), raw)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s /stats/prometheus: %w", pods[i], err)
		}
	}
	return out, nil
}
