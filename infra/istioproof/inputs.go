// Package istioproof checks the lab's Istio-facing output against Istio's own code, at the
// Istio release the lab pins: its Helm charts (rendered with Helm's SDK and installed on a real
// kube-apiserver) and its control plane (pilot, run in-process, turning the lab's Gateway,
// VirtualServices and each scenario's EnvoyFilter into the listener it would push to the
// gateway). It is its own Go module because Istio's dependencies (Kubernetes 0.36 libraries,
// Helm 4) conflict with the program's; it reads what the program renders from files the main
// module's tests keep in step with the program: infra/testdata/istio-inputs.yaml and
// infra/envoyfilter/testdata.
package istioproof

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Pinned is the Istio release whose code this module builds against: the module version in
// go.mod (v0.0.0-20260827124520-eed52ebb66ad) is the commit of the 1.31.0 tag, the release the
// lab installs; the Go module proxy serves that pseudo-version, not the tag. Helm's SDK is the
// one Istio 1.31.0 itself builds with (helm.sh/helm/v4 v4.2.0), with Kubernetes' v0.36.1
// libraries and istio.io/client-go v1.31.0 (tagged from the same commit as the client-go
// pseudo-version Istio 1.31.0 requires).
const Pinned = "1.31.0"

// Release is one Istio chart release as the program installs it.
type Release struct {
	Name      string         `json:"name"`
	Chart     string         `json:"chart"`
	Version   string         `json:"version"`
	Namespace string         `json:"namespace"`
	Values    map[string]any `json:"values"`
}

// Inputs is what the program hands to Istio (infra/testdata/istio-inputs.yaml).
type Inputs struct {
	IstioVersion string           `json:"istioVersion"`
	Releases     []Release        `json:"releases"`
	Objects      []map[string]any `json:"objects"`
	// KnobOverrides set every knob (igwlab:knobs), and EveryKnobEnvoyFilter is the filter the
	// program renders for them.
	KnobOverrides        map[string]string `json:"knobOverrides"`
	EveryKnobEnvoyFilter map[string]any    `json:"everyKnobEnvoyFilter"`
	// LocalGatewayMemoryLimit is the memory limit, in bytes, the local target holds each
	// emulated gateway pod to (stacks.GatewayMemoryLimit).
	LocalGatewayMemoryLimit int64 `json:"localGatewayMemoryLimit"`
	// Platforms are the releases the program installs on an existing cluster of each platform
	// (igwlab:platform); Releases are the k3d lab's.
	Platforms map[string][]Release `json:"platforms"`
	// ChartRequests are what the program takes Istio's pods to request (infra.IstiodRequests
	// and the others): istiod, ztunnel and istio-cni per node, and the waypoint's proxy.
	ChartRequests map[string]Request `json:"chartRequests"`
	// EastWest is what the program hands Istio for east-west scenarios: one's Istio releases
	// (ztunnel's env) and another's waypoint Gateway, parameters and filter.
	EastWest EastWestInputs `json:"eastWest"`
}

// EastWestInputs are an east-west scenario's inputs to Istio.
type EastWestInputs struct {
	Scenario         string           `json:"scenario"`
	Releases         []Release        `json:"releases"`
	WaypointScenario string           `json:"waypointScenario"`
	WaypointObjects  []map[string]any `json:"waypointObjects"`
}

// Request is a pod's CPU (millicores) and memory (bytes) request.
type Request struct {
	CPUMilli int64 `json:"cpuMilli"`
	MemBytes int64 `json:"memBytes"`
}

// Paths of the program's output, relative to this module.
var (
	InputsFile     = filepath.Join("..", "testdata", "istio-inputs.yaml")
	EnvoyFilterDir = filepath.Join("..", "envoyfilter", "testdata")
)

// LoadInputs reads the program's inputs. Values go through JSON as Helm receives them from the
// Kubernetes provider (numbers as float64).
func LoadInputs(path string) (*Inputs, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in Inputs
	if err := yaml.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(in.Releases) == 0 || in.EveryKnobEnvoyFilter == nil {
		return nil, fmt.Errorf("%s: no releases or no EnvoyFilter", path)
	}
	return &in, nil
}

// Release returns the release of a chart.
func (in *Inputs) Release(chart string) (Release, error) {
	for _, r := range in.Releases {
		if r.Chart == chart {
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("the program installs no %s chart", chart)
}

// Object returns the object of a kind and name.
func (in *Inputs) Object(kind, name string) (map[string]any, error) {
	for _, o := range in.Objects {
		if o["kind"] == kind && Meta(o, "name") == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("the program creates no %s %s", kind, name)
}

// Meta returns a metadata field of an object.
func Meta(o map[string]any, field string) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// EnvoyFilters reads every scenario's EnvoyFilter, by scenario name.
func EnvoyFilters(dir string) (map[string]map[string]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no EnvoyFilters in %s: %v", dir, err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = obj
	}
	return out, nil
}

// Names returns the keys of a map, sorted.
func Names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Clone deep-copies a JSON-shaped value, so a test can break one copy.
func Clone(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs ...map[string]any) string {
	var b strings.Builder
	for _, o := range objs {
		y, _ := yaml.Marshal(o)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}
