package infra

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// loadWith runs LoadConfig on a stack configuration given as key -> value (igwlab: is added).
func loadWith(t *testing.T, kv map[string]string, secret bool) (Config, error) {
	t.Helper()
	var cfg Config
	var loadErr error
	conf := map[string]string{}
	for k, v := range kv {
		conf["igwlab:"+k] = v
	}
	var secrets []string
	if secret {
		conf["igwlab:grafanaPassword"] = "pw"
		secrets = []string{"igwlab:grafanaPassword"}
	}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		cfg, loadErr = LoadConfig(ctx)
		return nil
	}, pulumi.WithMocks("igwlab", "lab", &recorder{}), func(info *pulumi.RunInfo) {
		info.Config = conf
		info.ConfigSecretKeys = secrets
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, loadErr
}

func TestConfigDefaultsAndOverrides(t *testing.T) {
	cfg, err := loadWith(t, map[string]string{"scenario": "04-mrpc", "proxyConcurrency": "2", "monitoring": "true"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scenario != "04-mrpc" || cfg.ProxyConcurrency != 2 || cfg.GatewayReplicas != 6 || cfg.ClusterName != "igw-tc-lab" {
		t.Fatalf("%+v", cfg)
	}
}

// The small profile sets the sizes; a size's own key still overrides it.
func TestConfigProfile(t *testing.T) {
	for _, tc := range []struct {
		kv                map[string]string
		gateway, backends int
	}{
		{map[string]string{}, 6, 2},
		{map[string]string{"profile": "small"}, 4, 1},
		{map[string]string{"profile": "small", "gatewayReplicas": "3"}, 3, 1},
		{map[string]string{"gatewayReplicas": "4", "profile": "full"}, 4, 2},
	} {
		cfg, err := loadWith(t, tc.kv, true)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.GatewayReplicas != tc.gateway || cfg.BackendReplicas != tc.backends {
			t.Errorf("%v: %d gateway pods, %d of each backend; want %d, %d", tc.kv, cfg.GatewayReplicas, cfg.BackendReplicas, tc.gateway, tc.backends)
		}
	}
	m := run(t, func(c *Config) { *c = c.WithProfile(ProfileSmall) })
	for name, want := range map[string]float64{"httpbin": 1, "grpcbin": 1} {
		d := m.find("kubernetes:apps/v1:Deployment", name)
		if got := d.Inputs.Mappable()["spec"].(map[string]any)["replicas"]; got != want {
			t.Errorf("the small lab runs %v %s pods, want %v", got, name, want)
		}
	}
}

func TestConfigErrorsNameKeyValueAndRange(t *testing.T) {
	cases := []struct {
		kv     map[string]string
		secret bool
		want   []string
	}{
		{map[string]string{"scenario": "02-trigr"}, true, []string{"igwlab:scenario", `"02-trigr"`, "02-trigger", "13-conn-balance"}},
		{map[string]string{"gatewayReplicas": "0"}, true, []string{"igwlab:gatewayReplicas", `"0"`, "1..50"}},
		{map[string]string{"proxyConcurrency": "two"}, true, []string{"igwlab:proxyConcurrency", `"two"`, "whole number"}},
		{map[string]string{"proxyConcurrency": "99"}, true, []string{"igwlab:proxyConcurrency", "1..64"}},
		{map[string]string{"cluster": "kind"}, true, []string{"igwlab:cluster", "k3d or existing"}},
		{map[string]string{"k3sImage": "rancher/k3s:latest"}, true, []string{"igwlab:k3sImage", "pinned"}},
		{map[string]string{"monitoring": "yes"}, true, []string{"igwlab:monitoring", "true or false"}},
		{map[string]string{"gatewayServiceType": "External"}, false, []string{"igwlab:gatewayServiceType", "ClusterIP, LoadBalancer, NodePort"}},
		{map[string]string{"gatewayServiceType": "ClusterIP"}, false, []string{"igwlab:gatewayServiceType", "LoadBalancer (or unset) when igwlab:cluster is k3d"}},
		{map[string]string{"istioVersion": "1.28.10"}, false, []string{"igwlab:istioVersion", "1.31.x", "1.27.x (out of support since 2026-04-07)"}},
		{map[string]string{"istioVersion": "1.27.9", "k3sImage": "rancher/k3s:v1.34.1-k3s1"}, false, []string{"igwlab:k3sImage", "Istio 1.27 supports Kubernetes 1.29 to 1.33, not 1.34"}},
		{map[string]string{"gatewayApiVersion": "1.6"}, false, []string{"igwlab:gatewayApiVersion", "v1.6.0"}},
		{map[string]string{"cluster": "existing"}, true, []string{"igwlab:kubeconfig"}},
		{map[string]string{"renderAllScenarios": "true"}, true, []string{"igwlab:renderAllScenarios", "renderDir"}},
		{map[string]string{"istioVersion": "latest"}, true, []string{"igwlab:istioVersion", "1.31.0"}},
		{map[string]string{"profile": "tiny"}, true, []string{"igwlab:profile", `"tiny"`, "full (6 gateway pods, 2 of each backend) or small (4 gateway pods, 1 of each backend)"}},
	}
	for _, c := range cases {
		_, err := loadWith(t, c.kv, c.secret)
		if err == nil {
			t.Errorf("%v accepted", c.kv)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.kv, err, w)
			}
		}
	}
}
