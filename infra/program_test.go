package infra

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/stacks"
)

// recorder is a Pulumi mock that records every resource registration, so a test can look at
// the whole graph after the program ran, without awaiting outputs.
type recorder struct {
	mu    sync.Mutex
	res   []pulumi.MockResourceArgs
	calls []pulumi.MockCallArgs
	// lastOutputs are the stack's outputs of its last update, as a reference to the stack
	// reads them (nil: a stack never updated).
	lastOutputs map[string]any
}

func (m *recorder) NewResource(a pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	m.res = append(m.res, a)
	m.mu.Unlock()
	if a.TypeToken == "pulumi:pulumi:StackReference" {
		// What the engine's read of a stack reference returns (its name, outputs and the
		// names of the secret ones).
		return a.Name + "_id", resource.NewPropertyMapFromMap(map[string]any{"name": a.Inputs["name"].StringValue(),
			"outputs": m.lastOutputs, "secretOutputNames": []any{}}), nil
	}
	out := a.Inputs.Copy()
	if a.TypeToken == "command:local:Command" {
		out["stdout"] = resource.NewStringProperty("apiVersion: v1\nkind: Config\n")
	}
	return a.Name + "_id", out, nil
}

func (m *recorder) Call(a pulumi.MockCallArgs) (resource.PropertyMap, error) {
	m.mu.Lock()
	m.calls = append(m.calls, a)
	m.mu.Unlock()
	return a.Args, nil
}

func (m *recorder) find(typ, name string) *pulumi.MockResourceArgs {
	for i := range m.res {
		if m.res[i].TypeToken == typ && m.res[i].Name == name {
			return &m.res[i]
		}
	}
	return nil
}

// run builds the lab with a configuration edited from the defaults.
func run(t *testing.T, edit func(*Config)) *recorder {
	t.Helper()
	m := &recorder{}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		cfg := Defaults.WithGrafanaPassword(pulumi.ToSecret(pulumi.String("s3cret")).(pulumi.StringOutput))
		if edit != nil {
			edit(&cfg)
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		_, err := Build(ctx, cfg)
		return err
	}, pulumi.WithMocks("igwlab", "lab", m))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func scenario(name string) func(*Config) { return func(c *Config) { c.Scenario = name } }

// graph lists the registered resources as "type name <- parent" lines, sorted.
func (m *recorder) graph() string {
	var lines []string
	for _, r := range m.res {
		parent := ""
		if r.RegisterRPC != nil && r.RegisterRPC.Parent != "" {
			parent = " <- " + resource.URN(r.RegisterRPC.Parent).Name()
		}
		lines = append(lines, r.TypeToken+" "+r.Name+parent)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func TestResourceGraphPerScenario(t *testing.T) {
	cat, _ := stacks.Builtin()
	for _, name := range cat.Names() {
		got := run(t, scenario(name)).graph()
		testutil.Golden(t, filepath.Join("testdata", "graph", name+".txt"), []byte(got))
	}
}

const efType = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"

// TestEnvoyFilterMatchesGolden checks that the program registers, for every scenario, exactly
// the EnvoyFilter the envoyfilter package renders (and its golden files pin).
func TestEnvoyFilterMatchesGolden(t *testing.T) {
	cat, _ := stacks.Builtin()
	for _, sc := range cat.All() {
		m := run(t, scenario(sc.Name))
		ef := m.find(efType, "envoyfilter")
		if ef == nil {
			t.Fatalf("%s: no EnvoyFilter", sc.Name)
		}
		got := ef.Inputs["spec"].Mappable()
		want := envoyfilter.Spec(sc.Lab(), envoyfilter.DefaultTarget)
		if fmt.Sprint(normalize(got)) != fmt.Sprint(normalize(want)) {
			t.Errorf("%s: registered spec\n%v\nwant\n%v", sc.Name, got, want)
		}
		meta := ef.Inputs["metadata"].ObjectValue()
		if meta["namespace"].StringValue() != GatewayNamespace || meta["name"].StringValue() != envoyfilter.DefaultName {
			t.Errorf("%s: EnvoyFilter at %v/%v", sc.Name, meta["namespace"], meta["name"])
		}
	}
}

// normalize makes numbers comparable whatever their Go type.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int, int64, uint64:
		return fmt.Sprint(x)
	}
	return v
}

// inputs maps every resource to its rendered inputs, to compare two runs.
func (m *recorder) inputs() map[string]string {
	out := map[string]string{}
	for _, r := range m.res {
		out[r.TypeToken+" "+r.Name] = canonical(resource.NewObjectProperty(r.Inputs))
	}
	return out
}

// canonical renders a property value deterministically (sorted keys, secrets marked).
func canonical(v resource.PropertyValue) string {
	switch {
	case v.IsSecret():
		return "secret(" + canonical(v.SecretValue().Element) + ")"
	case v.IsComputed() || v.IsOutput():
		return "<unknown>"
	case v.IsObject():
		obj := v.ObjectValue()
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(k + ":" + canonical(obj[resource.PropertyKey(k)]) + ",")
		}
		return b.String() + "}"
	case v.IsArray():
		var b strings.Builder
		b.WriteString("[")
		for _, e := range v.ArrayValue() {
			b.WriteString(canonical(e) + ",")
		}
		return b.String() + "]"
	case v.IsNumber():
		return strconv.FormatFloat(v.NumberValue(), 'f', -1, 64)
	}
	return fmt.Sprintf("%q", fmt.Sprint(v.V))
}

func TestSwitchingScenarioChangesOnlyScenarioResources(t *testing.T) {
	cases := []struct {
		from, to string
		allowed  []string // resources that may change beyond the EnvoyFilter
	}{
		{"02-trigger", "04-mrpc", nil},
		{"02-trigger", "13-conn-balance", nil},
		{"02-trigger", "11-realistic-filters", []string{"kubernetes:security.istio.io/v1:RequestAuthentication request-authentication-11-realistic-filters"}},
		{"02-trigger", "07-waypoint-trigger", []string{"kubernetes:core/v1:Service httpbin", "igwlab:lab:Waypoint waypoint",
			"kubernetes:core/v1:ConfigMap waypoint-params", "kubernetes:gateway.networking.k8s.io/v1:Gateway gw-igw-test-waypoint"}},
	}
	for _, c := range cases {
		a, b := run(t, scenario(c.from)).inputs(), run(t, scenario(c.to)).inputs()
		allowed := map[string]bool{efType + " envoyfilter": true, "igwlab:lab:Scenario scenario": true}
		for _, k := range c.allowed {
			allowed[k] = true
		}
		for k := range union(a, b) {
			if a[k] != b[k] && !allowed[k] {
				t.Errorf("%s -> %s changed %s", c.from, c.to, k)
			}
		}
		if a[efType+" envoyfilter"] == b[efType+" envoyfilter"] {
			t.Errorf("%s -> %s left the EnvoyFilter unchanged", c.from, c.to)
		}
	}
	// The waypoint labels appear only with the waypoint.
	svc := run(t, scenario("07-waypoint-trigger")).find("kubernetes:core/v1:Service", "httpbin")
	lbl := svc.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()
	if lbl["istio.io/use-waypoint"].StringValue() != WaypointName || lbl["istio.io/ingress-use-waypoint"].StringValue() != "true" {
		t.Errorf("httpbin Service labels %v", lbl)
	}
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func gatewayValues(t *testing.T, m *recorder) resource.PropertyMap {
	t.Helper()
	r := m.find("kubernetes:helm.sh/v3:Release", GatewayRelease)
	if r == nil {
		t.Fatal("no gateway release")
	}
	if r.Inputs["name"].StringValue() != GatewayRelease {
		t.Fatalf("gateway release name %v: a random name would change the pods' istio label", r.Inputs["name"])
	}
	return r.Inputs["values"].ObjectValue()
}

func TestGatewayConcurrencyAndStatsMatcher(t *testing.T) {
	m := run(t, func(c *Config) { c.ProxyConcurrency = 2; c.GatewayReplicas = 4 })
	v := gatewayValues(t, m)
	ann := v["podAnnotations"].ObjectValue()["proxy.istio.io/config"].StringValue()
	if !strings.Contains(ann, "concurrency: 2\n") {
		t.Errorf("proxy config %q lacks concurrency 2", ann)
	}
	for _, re := range StatsInclusions {
		if !strings.Contains(ann, fmt.Sprintf("%q", re)) {
			t.Errorf("proxyStatsMatcher lacks %s", re)
		}
	}
	res := v["resources"].ObjectValue()
	if res["limits"].ObjectValue()["cpu"].StringValue() != "2" || res["requests"].ObjectValue()["cpu"].StringValue() != "2" {
		t.Errorf("CPU request/limit %v: concurrency 2 needs 2 CPUs", res)
	}
	if v["replicaCount"].NumberValue() != 4 || v["autoscaling"].ObjectValue()["enabled"].BoolValue() {
		t.Errorf("replicas %v, autoscaling %v", v["replicaCount"], v["autoscaling"])
	}
	if v["labels"].ObjectValue()["istio"].StringValue() != "ingressgateway" {
		t.Errorf("labels %v", v["labels"])
	}
}

func dependsOnName(r *pulumi.MockResourceArgs, name string) bool {
	for _, d := range r.RegisterRPC.GetDependencies() {
		if resource.URN(d).Name() == name {
			return true
		}
	}
	return false
}

func TestDependencyOrder(t *testing.T) {
	m := run(t, scenario("07-waypoint-trigger"))
	cases := []struct{ typ, name, dep string }{
		{"kubernetes:helm.sh/v3:Release", "istiod", "istio-base"},
		{"kubernetes:helm.sh/v3:Release", "istiod", "gateway-api-crds"},
		{"kubernetes:helm.sh/v3:Release", "istio-cni", "istiod"},
		{"kubernetes:helm.sh/v3:Release", "ztunnel", "istio-cni"},
		{"kubernetes:helm.sh/v3:Release", GatewayRelease, "istiod"},
		{efType, "envoyfilter", "istio-base"},
		{efType, "envoyfilter", GatewayRelease},
		{"kubernetes:networking.istio.io/v1:Gateway", "gw-igw-test-gateway", "istio-base"},
		{"kubernetes:networking.istio.io/v1:VirtualService", "vs-httpbin", "istio-base"},
		{"kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw-igw-test-waypoint", "gateway-api-crds"},
		{"kubernetes:monitoring.coreos.com/v1:PodMonitor", "pm-igw-envoy", "kube-prom-stack"},
		// Each monitor (and its check's minutes of patience) waits for the pods it selects.
		{"kubernetes:monitoring.coreos.com/v1:PodMonitor", "pm-igw-envoy", GatewayRelease},
		{"kubernetes:monitoring.coreos.com/v1:PodMonitor", "pm-ztunnel", "ztunnel"},
		{"kubernetes:monitoring.coreos.com/v1:PodMonitor", "pm-waypoint-envoy", "gw-igw-test-waypoint"},
		{"pulumi:providers:kubernetes", "k8s", "k3d-kubeconfig"},
	}
	for _, c := range cases {
		r := m.find(c.typ, c.name)
		if r == nil {
			t.Errorf("no %s %s", c.typ, c.name)
			continue
		}
		if !dependsOnName(r, c.dep) {
			t.Errorf("%s %s does not wait for %s (deps %v)", c.typ, c.name, c.dep, r.RegisterRPC.GetDependencies())
		}
	}
}

func TestSecretsStaySecret(t *testing.T) {
	m := run(t, nil)
	kps := m.find("kubernetes:helm.sh/v3:Release", "kube-prom-stack")
	grafana := kps.Inputs["values"].ObjectValue()["grafana"].ObjectValue()
	if _, ok := grafana["adminPassword"]; ok {
		t.Error("Grafana's password is in the chart's values (and so in the release's state)")
	}
	if s := grafana["admin"].ObjectValue()["existingSecret"]; !s.IsString() || s.StringValue() != GrafanaAdminSecret {
		t.Errorf("Grafana's admin login comes from %v, want the Secret %s", s, GrafanaAdminSecret)
	}
	sec := m.find("kubernetes:core/v1:Secret", "grafana-admin")
	if data := sec.Inputs["stringData"]; !data.IsSecret() || data.SecretValue().Element.ObjectValue()["admin-password"].StringValue() != "s3cret" {
		t.Errorf("the admin Secret holds %v, want the stack's secret, as a secret", data)
	}
	kc := m.find("command:local:Command", "k3d-kubeconfig")
	if kc == nil || !contains(kc.RegisterRPC.GetAdditionalSecretOutputs(), "stdout") {
		t.Errorf("the kubeconfig command's output is not secret")
	}
	for _, r := range m.res {
		if strings.Contains(fmt.Sprint(r.Inputs.Mappable()), "s3cret") && r.Name != "grafana-admin" {
			t.Errorf("the password appears in %s %s", r.TypeToken, r.Name)
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestExistingClusterAndRenderMode(t *testing.T) {
	m := run(t, func(c *Config) {
		c.Cluster, c.Kubeconfig, c.KubeContext = "existing", "/tmp/kubeconfig", "prod-eks"
		c.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
	})
	if m.find("command:local:Command", "k3d-cluster") != nil {
		t.Error("an existing cluster still runs k3d")
	}
	p := m.find("pulumi:providers:kubernetes", "k8s")
	if p == nil || p.Inputs["context"].StringValue() != "prod-eks" {
		t.Errorf("provider %v", p)
	}
	m = run(t, func(c *Config) {
		c.Cluster, c.RenderDir, c.InstallUpstream, c.BuildImages, c.RenderAllScenarios = "existing", "/tmp/out", false, false, true
	})
	if m.find("kubernetes:helm.sh/v3:Release", "istiod") != nil || m.find("command:local:Command", "h2dial-image") != nil {
		t.Error("render mode still installs charts or builds images")
	}
	cat, _ := stacks.Builtin()
	for _, n := range cat.Names() {
		if m.find(efType, "envoyfilter-"+n) == nil {
			t.Errorf("renderAllScenarios lacks %s", n)
		}
	}
}

// The gateway's pods start with the bootstrap override that turns on each worker's dispatcher
// stats: the ConfigMap exists before the release that mounts it, under the key Istio's
// injection templates read, and the pod annotation names it.
func TestGatewayBootstrapOverride(t *testing.T) {
	m := run(t, func(c *Config) {})
	cm := m.find("kubernetes:core/v1:ConfigMap", "gateway-bootstrap")
	if cm == nil {
		t.Fatal("no bootstrap override ConfigMap")
	}
	meta := cm.Inputs["metadata"].ObjectValue()
	if meta["name"].StringValue() != GatewayBootstrap || meta["namespace"].StringValue() != GatewayNamespace {
		t.Errorf("ConfigMap %v", meta)
	}
	if got := cm.Inputs["data"].ObjectValue()[BootstrapOverrideKey].StringValue(); got != BootstrapOverride {
		t.Errorf("%s = %q", BootstrapOverrideKey, got)
	}
	if got := gatewayValues(t, m)["podAnnotations"].ObjectValue()["sidecar.istio.io/bootstrapOverride"].StringValue(); got != GatewayBootstrap {
		t.Errorf("bootstrapOverride annotation %q, want %s", got, GatewayBootstrap)
	}
	if !dependsOnName(m.find("kubernetes:helm.sh/v3:Release", GatewayRelease), "gateway-bootstrap") {
		t.Error("the gateway release does not wait for the override its pods mount")
	}
}
