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
		{map[string]string{}, false, []string{"igwlab:grafanaPassword", "--secret"}},
		{map[string]string{"cluster": "existing"}, true, []string{"igwlab:kubeconfig"}},
		{map[string]string{"renderAllScenarios": "true"}, true, []string{"igwlab:renderAllScenarios", "renderDir"}},
		{map[string]string{"istioVersion": "latest"}, true, []string{"igwlab:istioVersion", "1.27.9"}},
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
