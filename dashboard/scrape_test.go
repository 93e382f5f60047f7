package dashboard

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestScrapeConfig(t *testing.T) {
	targets := []ScrapeTarget{
		{Job: "istio-ingressgateway", Pod: "istio-ingressgateway-a", HostPort: "127.0.0.2:15000", Path: "/stats/prometheus"},
		{Job: "istio-ingressgateway", Pod: "istio-ingressgateway-b", HostPort: "127.0.0.3:15000", Path: "/stats/prometheus"},
		{Job: "ztunnel", Pod: "ztunnel-x", HostPort: "127.0.1.2:15020", Path: "/metrics"},
	}
	b, err := ScrapeConfig(time.Second, targets)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global struct {
			Interval string `yaml:"scrape_interval"`
		}
		Jobs []struct {
			Name    string `yaml:"job_name"`
			Path    string `yaml:"metrics_path"`
			Statics []struct {
				Targets []string
				Labels  map[string]string
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Global.Interval != "1s" || len(cfg.Jobs) != 2 || len(cfg.Jobs[0].Statics) != 2 || cfg.Jobs[1].Path != "/metrics" ||
		cfg.Jobs[0].Statics[1].Labels["pod"] != "istio-ingressgateway-b" || cfg.Jobs[0].Statics[1].Targets[0] != "127.0.0.3:15000" {
		t.Errorf("scrape config:\n%s", b)
	}

	for _, tc := range []struct {
		name     string
		interval time.Duration
		targets  []ScrapeTarget
		want     string
	}{
		{"fast", 100 * time.Millisecond, targets, "allowed 1s and above"},
		{"no pod", time.Second, []ScrapeTarget{{Job: "j", HostPort: "127.0.0.1:1", Path: "/m"}}, "all required"},
		{"two paths", time.Second, append(targets, ScrapeTarget{Job: "ztunnel", Pod: "z", HostPort: "127.0.0.1:2", Path: "/stats"}), "disagree"},
	} {
		if _, err := ScrapeConfig(tc.interval, tc.targets); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLocalDefaultsFollowTheListener(t *testing.T) {
	v := LocalDefaults(443)
	if v["hcm"] != "outbound_0.0.0.0_443" || v["listener"] != "0.0.0.0_443" || v["pod"] != Defaults()["pod"] {
		t.Errorf("LocalDefaults(443) = %v", v)
	}
}
