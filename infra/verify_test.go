package infra

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// hooks lists the resources that have hooks bound, as "type name: after_create [..] after_update [..]".
func (m *recorder) hooks() []string {
	var out []string
	for _, r := range m.res {
		h := r.RegisterRPC.GetHooks()
		if h == nil || (len(h.AfterCreate)+len(h.AfterUpdate)+len(h.BeforeCreate)+len(h.BeforeUpdate)+len(h.BeforeDelete)+len(h.AfterDelete)) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: after_create %v after_update %v before %v %v %v after_delete %v",
			r.TypeToken, r.Name, h.AfterCreate, h.AfterUpdate, h.BeforeCreate, h.BeforeUpdate, h.BeforeDelete, h.AfterDelete))
	}
	sort.Strings(out)
	return out
}

func existing(c *Config) {
	c.Cluster, c.Kubeconfig, c.Images.H2dialPushed = ClusterExisting, "/tmp/kubeconfig", "registry.example.com/igwlab/h2dial:v1"
}

// TestChecksAreBoundToTheirResources: the scenario's EnvoyFilter carries the in-effect check,
// the gateway's release the workers-and-stats check, each PodMonitor the live-targets check
// (the waypoint's only in a waypoint scenario, none without kube-prometheus-stack), the
// waypoint's Gateway (scenarios 06 and 07 only) the carries-traffic check, all after create and
// after update and nothing else; render mode and igwlab:verify false bind none.
func TestChecksAreBoundToTheirResources(t *testing.T) {
	bound := func(typ, name, hook string) string {
		return fmt.Sprintf("%s %s: after_create [%s] after_update [%s] before [] [] [] after_delete []", typ, name, hook, hook)
	}
	const pm = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
	ef := bound(efType, "envoyfilter", ScenarioCheck)
	gw := bound("kubernetes:helm.sh/v3:Release", GatewayRelease, GatewayCheck)
	envoyMon := bound(pm, "pm-igw-envoy", MonitoringCheck+"igw-envoy")
	waypointMon := bound(pm, "pm-waypoint-envoy", MonitoringCheck+"waypoint-envoy")
	ztunnelMon := bound(pm, "pm-ztunnel", MonitoringCheck+"ztunnel")
	waypoint := bound("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw-"+WaypointName, WaypointCheck)
	both := []string{gw, envoyMon, ztunnelMon, ef}
	cases := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"k3d lab", nil, both},
		{"k3d lab, waypoint baseline", scenario("06-waypoint-baseline"), []string{waypoint, gw, envoyMon, waypointMon, ztunnelMon, ef}},
		{"k3d lab, waypoint trigger", scenario("07-waypoint-trigger"), []string{waypoint, gw, envoyMon, waypointMon, ztunnelMon, ef}},
		{"waypoint admins by URL, no Helm", func(c *Config) {
			existing(c)
			scenario("07-waypoint-trigger")(c)
			c.InstallUpstream, c.Monitoring = false, false
			c.GatewayAdmins, c.WaypointAdmins = []string{"http://127.0.0.1:15000"}, []string{"http://127.0.0.1:15100"}
			c.GatewayURL = "http://127.0.0.1:8080"
		}, []string{waypoint, ef}},
		{"existing cluster", func(c *Config) { existing(c) }, both},
		{"admins by URL, no Helm", func(c *Config) {
			existing(c)
			c.InstallUpstream, c.Monitoring = false, false
			c.GatewayAdmins = []string{"http://127.0.0.1:15000"}
		}, []string{ef}},
		{"waypoint scenario, verify off", func(c *Config) { scenario("06-waypoint-baseline")(c); c.Verify = false }, nil},
		{"every scenario, render mode", func(c *Config) {
			existing(c)
			c.RenderDir, c.RenderAllScenarios = t.TempDir(), true
		}, nil},
		{"verify off", func(c *Config) { c.Verify = false }, nil},
	}
	for _, c := range cases {
		got := run(t, c.edit).hooks()
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: hooks\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// TestVerifyConfig: the keys read, with their defaults and their errors.
func TestVerifyConfig(t *testing.T) {
	if !Defaults.Verify || Defaults.CheckTimeout() != Defaults.GatewayDrainDuration+DrainMargin {
		t.Errorf("defaults: verify %v, timeout %s", Defaults.Verify, Defaults.CheckTimeout())
	}
	cases := []struct {
		conf map[string]string
		err  string
		want func(Config) bool
	}{
		{map[string]string{"verify": "false"}, "", func(c Config) bool { return !c.Verify }},
		{map[string]string{"verifyTimeout": "90s"}, "", func(c Config) bool { return c.CheckTimeout().Seconds() == 90 }},
		{map[string]string{"gatewayAdmins": "http://127.0.0.1:15000, http://127.0.0.1:15001"}, "",
			func(c Config) bool { return len(c.GatewayAdmins) == 2 }},
		{map[string]string{"prometheusUrl": "http://127.0.0.1:9090/"}, "", func(c Config) bool { return c.PrometheusURL == "http://127.0.0.1:9090" }},
		{map[string]string{"prometheusUrl": "prometheus:9090"}, `igwlab:prometheusUrl = "prometheus:9090": allowed one base URL`, nil},
		{map[string]string{"gatewayUrl": "http://127.0.0.1:8080/", "waypointAdmins": "http://127.0.0.1:15100,http://127.0.0.1:15101"}, "",
			func(c Config) bool { return c.GatewayURL == "http://127.0.0.1:8080" && len(c.WaypointAdmins) == 2 }},
		{map[string]string{"gatewayUrl": "http://a:1,http://b:2"}, `igwlab:gatewayUrl = "http://a:1,http://b:2": allowed one base URL`, nil},
		{map[string]string{"waypointAdmins": "127.0.0.1:15100"}, `igwlab:waypointAdmins = "127.0.0.1:15100": allowed Envoy admin base URLs`, nil},
		{map[string]string{"verify": "yes"}, `igwlab:verify = "yes": allowed true or false`, nil},
		{map[string]string{"verifyTimeout": "2h"}, `igwlab:verifyTimeout = "2h": allowed a duration from 1s to 30m`, nil},
		{map[string]string{"gatewayAdmins": "127.0.0.1:15000"}, `igwlab:gatewayAdmins = "127.0.0.1:15000": allowed Envoy admin base URLs`, nil},
	}
	for _, c := range cases {
		cfg, err := loadWith(t, c.conf, true)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.conf, err, c.err)
			}
			continue
		}
		if err != nil || !c.want(cfg) {
			t.Errorf("%v: %+v %v", c.conf, cfg, err)
		}
	}
}
