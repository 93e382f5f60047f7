package dashboard

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// ScrapeTarget is one metrics endpoint for Prometheus, labelled with the pod it stands for, as
// the real lab's PodMonitors label it, so every dashboard query works unchanged on it.
type ScrapeTarget struct {
	Job      string // e.g. istio-ingressgateway, ztunnel
	Pod      string // the pod label
	HostPort string // host:port of the endpoint
	Path     string // /stats/prometheus (Envoy) or /metrics (ztunnel)
}

// ScrapeConfig renders a prometheus.yml that scrapes the targets every interval, one job per
// Job name, each target with its pod label.
func ScrapeConfig(interval time.Duration, targets []ScrapeTarget) ([]byte, error) {
	if interval < time.Second {
		return nil, fmt.Errorf("scrape interval %s: allowed 1s and above", interval)
	}
	type static struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	type job struct {
		Name    string   `yaml:"job_name"`
		Path    string   `yaml:"metrics_path"`
		Statics []static `yaml:"static_configs"`
	}
	var jobs []*job
	byName := map[string]*job{}
	for _, t := range targets {
		if t.Job == "" || t.Pod == "" || t.HostPort == "" || t.Path == "" {
			return nil, fmt.Errorf("scrape target %+v: job, pod, host:port and path are all required", t)
		}
		j := byName[t.Job]
		if j == nil {
			j = &job{Name: t.Job, Path: t.Path}
			byName[t.Job] = j
			jobs = append(jobs, j)
		}
		if j.Path != t.Path {
			return nil, fmt.Errorf("job %s: targets disagree on the metrics path (%s, %s)", t.Job, j.Path, t.Path)
		}
		j.Statics = append(j.Statics, static{Targets: []string{t.HostPort}, Labels: map[string]string{"pod": t.Pod}})
	}
	cfg := map[string]any{
		"global":         map[string]any{"scrape_interval": interval.String(), "evaluation_interval": interval.String()},
		"scrape_configs": jobs,
	}
	return yaml.Marshal(cfg)
}

// LocalDefaults are the variable values for the local emulated pool, whose names follow the
// real lab's; only the listener port differs when the pool terminates TLS (443).
func LocalDefaults(listenerPort int) map[string]string {
	m := Defaults()
	m["hcm"] = fmt.Sprintf("outbound_0.0.0.0_%d", listenerPort)
	m["listener"] = fmt.Sprintf("0.0.0.0_%d", listenerPort)
	return m
}
