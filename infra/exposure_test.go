package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// build runs Build on cfg as given (no Grafana password unless cfg has one) against m.
func build(t *testing.T, m *recorder, cfg Config) error {
	t.Helper()
	var buildErr error
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		if err := cfg.Validate(); err != nil {
			return err
		}
		_, buildErr = Build(ctx, cfg)
		return nil
	}, pulumi.WithMocks("igwlab", "lab", m))
	if err != nil {
		t.Fatal(err)
	}
	return buildErr
}

func existingOn(platform string) func(*Config) {
	return func(c *Config) {
		c.Cluster, c.Kubeconfig, c.Platform = ClusterExisting, "/tmp/kubeconfig", platform
		c.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
	}
}

// TestNothingPublicUnlessAsked: off k3d the gateway Service is ClusterIP on every platform (the
// chart's default is LoadBalancer: an external balancer on GKE, an internet-facing ELB on EKS,
// an address that never comes on kubeadm), and every Service the program makes itself is
// ClusterIP; k3d keeps its LoadBalancer, which k3d publishes on 127.0.0.1 only. A stack that
// asks for LoadBalancer gets it, with the warning.
func TestNothingPublicUnlessAsked(t *testing.T) {
	for _, platform := range append([]string{""}, Platforms()...) {
		edit, want := existingOn(platform), ServiceClusterIP
		if platform == PlatformK3d {
			continue // k3d is the cluster the program creates: the "" case
		}
		if platform == "" {
			edit, want = nil, ServiceLoadBalancer
		}
		m := run(t, edit)
		svc := gatewayValues(t, m)["service"].ObjectValue()["type"]
		if !svc.IsString() || svc.StringValue() != want {
			t.Errorf("platform %q: the gateway Service is %v, want %s", platform, svc, want)
		}
		for _, r := range m.res {
			if r.TypeToken != "kubernetes:core/v1:Service" {
				continue
			}
			spec := r.Inputs["spec"].ObjectValue()
			if typ := spec["type"]; typ.HasValue() && typ.StringValue() != ServiceClusterIP {
				t.Errorf("platform %q: Service %s is %s", platform, r.Name, typ.StringValue())
			}
			for _, p := range spec["ports"].ArrayValue() {
				if np := p.ObjectValue()["nodePort"]; np.HasValue() {
					t.Errorf("platform %q: Service %s has nodePort %v", platform, r.Name, np)
				}
			}
		}
	}
	cfg := Defaults
	existingOn(PlatformGKE)(&cfg)
	if cfg.GatewayExposed() {
		t.Error("an existing cluster's gateway counts as exposed by default")
	}
	cfg.GatewayServiceType = ServiceLoadBalancer
	m := run(t, func(c *Config) { *c = cfg.WithGrafanaPassword(c.GrafanaPassword) })
	if got := gatewayValues(t, m)["service"].ObjectValue()["type"].StringValue(); got != ServiceLoadBalancer || !cfg.GatewayExposed() {
		t.Errorf("asked for LoadBalancer: %s, exposed %v", got, cfg.GatewayExposed())
	}
	for _, w := range []string{"igwlab:gatewayServiceType is LoadBalancer", "0.0.0.0/0", "go-httpbin", "pulumi config rm igwlab:gatewayServiceType"} {
		if !strings.Contains(cfg.exposureWarning(), w) {
			t.Errorf("the warning lacks %q: %s", w, cfg.exposureWarning())
		}
	}
}

// TestAClusterChangeIsRefusedBeforeAnything: a stack whose last update held a k3d cluster and
// whose config now names another cluster is refused before a single resource is registered
// (the engine would otherwise delete the k3d cluster and move every resource), whether the
// stack records the cluster in k3dCluster or, from before that output, only in kubeContext.
func TestAClusterChangeIsRefusedBeforeAnything(t *testing.T) {
	cfg := Defaults.WithGrafanaPassword(pulumi.ToSecret(pulumi.String("x")).(pulumi.StringOutput))
	existingOn(PlatformGKE)(&cfg)
	for _, last := range []map[string]any{{K3dClusterOutput: "igw-tc-lab"}, {"kubeContext": "k3d-igw-tc-lab", "scenario": "02-trigger"}} {
		m := &recorder{lastOutputs: last}
		err := build(t, m, cfg)
		if err == nil {
			t.Fatalf("last outputs %v: a switch to an existing cluster was accepted", last)
		}
		for _, w := range []string{"igwlab:cluster", "holds the k3d cluster igw-tc-lab", "would delete that cluster", "pulumi stack init gke", "pulumi config set igwlab:cluster k3d -s lab"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the refusal lacks %q: %v", w, err)
			}
		}
		if len(m.res) != 1 || m.res[0].TypeToken != "pulumi:pulumi:StackReference" {
			t.Errorf("the refused update registered %d resources", len(m.res))
		}
		if ref := m.res[0].Inputs["name"].StringValue(); ref != "organization/igwlab/lab" {
			t.Errorf("the stack reads %s, want itself", ref)
		}
	}
	// The same stack staying on k3d, and a new stack going to an existing cluster, proceed.
	k3d := Defaults.WithGrafanaPassword(cfg.GrafanaPassword)
	for _, tc := range []struct {
		cfg  Config
		last map[string]any
	}{{k3d, map[string]any{K3dClusterOutput: "igw-tc-lab"}}, {cfg, nil}, {cfg, map[string]any{"kubeContext": "prod-eks"}}} {
		if err := build(t, &recorder{lastOutputs: tc.last}, tc.cfg); err != nil {
			t.Errorf("cluster %s after %v: %v", tc.cfg.Cluster, tc.last, err)
		}
	}
	m := run(t, nil)
	if !slices.ContainsFunc(m.res, func(r pulumi.MockResourceArgs) bool { return r.TypeToken == "pulumi:pulumi:StackReference" }) {
		t.Error("the program does not read its own last outputs")
	}
}

// TestLabsPrometheusKeepsToItsOwn: on a cluster that already runs monitoring, the lab's
// Prometheus selects the lab's PodMonitors alone, in its own namespace, and its operator watches
// its own namespace only.
func TestLabsPrometheusKeepsToItsOwn(t *testing.T) {
	m := run(t, existingOn(PlatformEKS))
	v := m.find("kubernetes:helm.sh/v3:Release", "kube-prom-stack").Inputs["values"].ObjectValue()
	spec := v["prometheus"].ObjectValue()["prometheusSpec"].ObjectValue()
	sel := spec["podMonitorSelector"].ObjectValue()["matchLabels"].ObjectValue()
	ns := spec["podMonitorNamespaceSelector"].ObjectValue()["matchLabels"].ObjectValue()
	if len(sel) != 1 || sel[LabPartOf].StringValue() != LabName || ns["kubernetes.io/metadata.name"].StringValue() != MonitorNamespace {
		t.Errorf("PodMonitors selected by %v in namespaces %v", sel, ns)
	}
	if !v["prometheusOperator"].ObjectValue()["namespaces"].ObjectValue()["releaseNamespace"].BoolValue() {
		t.Error("the operator watches every namespace")
	}
	for _, r := range m.res {
		if r.TypeToken == "kubernetes:monitoring.coreos.com/v1:PodMonitor" {
			if l := r.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()[LabPartOf]; l.StringValue() != LabName {
				t.Errorf("PodMonitor %s lacks %s=%s: the lab's Prometheus would not select it", r.Name, LabPartOf, LabName)
			}
		}
	}
}

// TestGrafanaPasswordIsDrawnPerStack: without igwlab:grafanaPassword each stack gets a password
// of its own, drawn on its first up and kept (the Secret ignores later draws), secret; never one
// written into a file of the repository.
func TestGrafanaPasswordIsDrawnPerStack(t *testing.T) {
	var drawn []string
	for range 2 {
		m := &recorder{}
		if err := build(t, m, Defaults); err != nil {
			t.Fatal(err)
		}
		sec := m.find("kubernetes:core/v1:Secret", "grafana-admin")
		data := sec.Inputs["stringData"]
		if !data.IsSecret() {
			t.Fatalf("the drawn password is not secret: %v", data)
		}
		pw := data.SecretValue().Element.ObjectValue()["admin-password"].StringValue()
		if len(pw) != 24 {
			t.Errorf("drawn password %q", pw)
		}
		if ic := sec.RegisterRPC.GetIgnoreChanges(); !slices.Contains(ic, "stringData") || !slices.Contains(ic, "data") {
			t.Error("a later up would replace the password with a new draw")
		}
		drawn = append(drawn, pw)
	}
	if drawn[0] == drawn[1] {
		t.Error("two stacks drew the same password")
	}
}
