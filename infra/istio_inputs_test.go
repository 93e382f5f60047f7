package infra

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/stacks"
)

// istioInputsPath is read by the nested module infra/istioproof, which cannot import this
// package (Istio 1.27's dependencies conflict with the program's): it feeds these inputs to
// Istio's own charts and control plane.
var istioInputsPath = filepath.Join("testdata", "istio-inputs.yaml")

// TestIstioInputs records, from runs of the program with the lab's defaults, what it hands to
// Istio: the Istio chart releases with their values, in install order; the Gateway,
// VirtualServices and backend Services; scenario 11's RequestAuthentication (with the key set
// in testdata/jwks.json); the EnvoyFilter of an igwlab:knobs override that sets every knob
// (the catalog's own filters are in envoyfilter/testdata); and the releases on an existing GKE,
// EKS and AKS cluster (igwlab:platform). A program change that alters any of
// them fails here until accepted with -update, and then meets Istio's code in infra/istioproof.
func TestIstioInputs(t *testing.T) {
	jwks, err := os.ReadFile(filepath.Join("testdata", "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	overrides, knobs := everyKnob(t)
	def := run(t, nil)
	s11 := run(t, func(c *Config) { c.Scenario = "11-realistic-filters"; c.JWKS = strings.TrimSpace(string(jwks)) })
	all := run(t, func(c *Config) { c.Knobs = knobs })

	var objects []any
	for _, r := range def.res {
		switch r.TypeToken {
		case "kubernetes:networking.istio.io/v1:Gateway", "kubernetes:networking.istio.io/v1:VirtualService", "kubernetes:core/v1:Service":
			objects = append(objects, r.Inputs.Mappable())
		case "kubernetes:core/v1:ConfigMap":
			if r.Name == "gateway-bootstrap" { // the gateway's bootstrap override
				objects = append(objects, r.Inputs.Mappable())
			}
		}
	}
	ra := s11.find("kubernetes:security.istio.io/v1:RequestAuthentication", "request-authentication-11-realistic-filters")
	ef := all.find(efType, "envoyfilter")
	if ra == nil || ef == nil {
		t.Fatalf("RequestAuthentication %v, EnvoyFilter %v", ra, ef)
	}
	objects = append(objects, ra.Inputs.Mappable())
	sort.Slice(objects, func(i, j int) bool { return objectKey(objects[i]) < objectKey(objects[j]) })
	doc := map[string]any{
		"istioVersion":         Defaults.IstioVersion,
		"releases":             istioReleases(t, def),
		"objects":              objects,
		"knobOverrides":        overrides,
		"everyKnobEnvoyFilter": ef.Inputs.Mappable(),
		// What the local target holds each gateway pod to, checked against the chart's default.
		"localGatewayMemoryLimit": stacks.GatewayMemoryLimit,
		"platforms":               platformReleases(t),
		// What the program's Requests (and so igwlab doctor) take Istio's pods to request.
		"chartRequests": map[string]any{"istiod": IstiodRequests, "ztunnel": ZtunnelRequests, "istio-cni": CNIRequests, "waypoint": WaypointRequests},
		// An east-west scenario's Istio releases (ztunnel's env) and its waypoint's filter and
		// Gateway, for Istio's charts and control plane.
		"eastWest": eastWestInputs(t),
	}
	var b bytes.Buffer
	b.WriteString("# Written by TestIstioInputs (go test ./infra -run TestIstioInputs -update): what the program\n" +
		"# hands to Istio, read by infra/istioproof. Do not edit by hand.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	_ = enc.Close()
	if testutil.Updating() {
		if err := os.WriteFile(istioInputsPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(istioInputsPath)
	if err != nil {
		t.Fatalf("%v (go test ./infra -run TestIstioInputs -update)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s is stale: the program now hands Istio\n%s\n(accept with go test ./infra -run TestIstioInputs -update, then run make test-istio)", istioInputsPath, b.String())
	}
}

// eastWestInputs records the program's runs of two east-west scenarios: 23-zt-4-threads's
// Istio releases (ztunnel's env sets its threads and pool) and 22-ew-rotation's waypoint
// Gateway, its parameters and the filter that puts the scenario's knobs on it.
func eastWestInputs(t *testing.T) map[string]any {
	t.Helper()
	zt := run(t, func(c *Config) { c.Scenario = "23-zt-4-threads" })
	ew := run(t, func(c *Config) { c.Scenario = "22-ew-rotation" })
	var objects []any
	for _, r := range ew.res {
		switch {
		case r.TypeToken == efType && r.Name == "envoyfilter-waypoint",
			r.TypeToken == "kubernetes:gateway.networking.k8s.io/v1:Gateway" && strings.Contains(r.Name, WaypointName),
			r.TypeToken == "kubernetes:core/v1:ConfigMap" && r.Name == "waypoint-params":
			objects = append(objects, r.Inputs.Mappable())
		}
	}
	if len(objects) != 3 {
		t.Fatalf("22-ew-rotation: want the waypoint's Gateway, parameters and filter, got %d objects", len(objects))
	}
	sort.Slice(objects, func(i, j int) bool { return objectKey(objects[i]) < objectKey(objects[j]) })
	return map[string]any{"scenario": "23-zt-4-threads", "releases": istioReleases(t, zt), "waypointScenario": "22-ew-rotation", "waypointObjects": objects}
}

// platformReleases are the Istio releases on an existing cluster of each managed platform.
func platformReleases(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, p := range []string{PlatformGKE, PlatformEKS, PlatformAKS, PlatformGeneric} {
		out[p] = istioReleases(t, run(t, func(c *Config) {
			c.Cluster, c.Kubeconfig, c.Platform = ClusterExisting, "/tmp/kubeconfig", p
			c.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
		}))
	}
	return out
}

// everyKnob sets each registered knob to a value that is in range and differs from Envoy's
// default, as igwlab:knobs would; a knob added to the registry is covered without a test edit.
func everyKnob(t *testing.T) (map[string]any, stacks.Knobs) {
	t.Helper()
	var k stacks.Knobs
	text := map[string]any{}
	for _, s := range stacks.Registry {
		v := s.Example()
		if err := s.Set(&k, v); err != nil {
			t.Fatalf("%s=%s: %v", s.Path, v, err)
		}
		text[s.Path] = v
	}
	if len(envoyfilter.Spec(stacks.Scenario{Knobs: k}, envoyfilter.DefaultTarget)["configPatches"].([]any)) == 0 {
		t.Fatal("no patches for every knob")
	}
	return text, k
}

// istioChartReleases are the Helm releases of Istio's charts the program registered.
func (m *recorder) istioChartReleases() []pulumi.MockResourceArgs {
	var out []pulumi.MockResourceArgs
	for _, r := range m.res {
		if r.TypeToken != "kubernetes:helm.sh/v3:Release" {
			continue
		}
		if repo, _ := r.Inputs.Mappable()["repositoryOpts"].(map[string]any); repo == nil || repo["repo"] != IstioChartRepo {
			continue
		}
		out = append(out, r)
	}
	return out
}

// istioReleases lists the Istio chart releases in the order the program installs them (each
// after the releases it depends on).
func istioReleases(t *testing.T, m *recorder) []any {
	t.Helper()
	deps := map[string][]string{}
	byName := map[string]map[string]any{}
	for _, r := range m.istioChartReleases() {
		in := r.Inputs.Mappable()
		byName[r.Name] = map[string]any{"name": in["name"], "chart": in["chart"], "version": in["version"],
			"namespace": in["namespace"], "values": in["values"]}
		for _, d := range r.RegisterRPC.GetDependencies() {
			deps[r.Name] = append(deps[r.Name], resource.URN(d).Name())
		}
	}
	var out []any
	placed := map[string]bool{}
	for len(placed) < len(byName) {
		var ready []string
		for n := range byName {
			if placed[n] {
				continue
			}
			ok := true
			for _, d := range deps[n] {
				if _, rel := byName[d]; rel && !placed[d] {
					ok = false
				}
			}
			if ok {
				ready = append(ready, n)
			}
		}
		if len(ready) == 0 {
			t.Fatalf("Istio releases depend on each other in a cycle: %v", deps)
		}
		sort.Strings(ready)
		for _, n := range ready {
			placed[n] = true
			out = append(out, byName[n])
		}
	}
	if len(out) != 5 {
		t.Fatalf("%d Istio releases, want base, istiod, cni, ztunnel and the gateway", len(out))
	}
	return out
}

func objectKey(o any) string {
	m := o.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	return fmt.Sprint(m["kind"], "/", meta["namespace"], "/", meta["name"])
}
