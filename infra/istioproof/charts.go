package istioproof

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"istio.io/istio/manifests"
	"sigs.k8s.io/yaml"
)

// chartSources maps the published chart names (what `helm install istio/<name>` takes) to
// their folders in Istio's source tree, which istio.io/istio/manifests embeds.
var chartSources = map[string]string{
	"base":    "charts/base",
	"istiod":  "charts/istio-control/istio-discovery",
	"cni":     "charts/istio-cni",
	"ztunnel": "charts/ztunnel",
	"gateway": "charts/gateway",
}

// KubeVersion is the lab's Kubernetes (k3s v1.33.4): charts render against its capabilities.
var KubeVersion = MustKubeVersion("v1.33.4")

// MustKubeVersion parses a Kubernetes version as a cluster reports it (v1.33.5-gke.1200000,
// say) into Helm's capabilities: the full string stays .Capabilities.KubeVersion.Version (what
// a chart matches "-gke" against), the normalized one is what kubeVersion constraints check.
func MustKubeVersion(v string) common.KubeVersion {
	kv, err := common.ParseKubeVersion(v)
	if err != nil {
		panic(fmt.Sprintf("Kubernetes version %q: %v", v, err))
	}
	return *kv
}

// LoadChart loads a chart from the Istio module. Istio's release build stamps the published
// charts with the release as chart version and appVersion; the sources carry a placeholder
// (1.0.0), so LoadChart stamps version the same way. The default image hub and tag, which the
// release build stamps too, stay the sources' (nothing here pulls an image).
func LoadChart(name, version string) (*chart.Chart, error) {
	dir, ok := chartSources[name]
	if !ok {
		return nil, fmt.Errorf("no Istio chart %q (charts: %s)", name, strings.Join(Names(chartSources), ", "))
	}
	var files []*archive.BufferedFile
	err := fs.WalkDir(manifests.FS, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(manifests.FS, p)
		files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(p, dir+"/"), Data: b})
		return err
	})
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", name, err)
	}
	if c.Name() != name {
		return nil, fmt.Errorf("%s holds chart %q, want %q", dir, c.Name(), name)
	}
	c.Metadata.Version, c.Metadata.AppVersion = version, version
	return c, nil
}

// ExtractCharts writes the charts as `helm pull --untar` would lay them out (dir/<name>), for
// a Helm release that takes a local chart path.
func ExtractCharts(dir, version string) error {
	for name, src := range chartSources {
		c, err := LoadChart(name, version)
		if err != nil {
			return err
		}
		err = fs.WalkDir(manifests.FS, src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(manifests.FS, p)
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(p, src+"/")
			if rel == "Chart.yaml" {
				if b, err = yaml.Marshal(c.Metadata); err != nil {
					return err
				}
			}
			out := filepath.Join(dir, name, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Render renders a release client-side, as `helm install --dry-run` does: the values are
// coalesced with the chart's and validated against its values.schema.json where it has one,
// and every template must render. It returns the manifest, CRDs included.
func Render(c *chart.Chart, r Release) (string, error) { return RenderOn(c, r, KubeVersion) }

// RenderOn renders a release against another cluster's Kubernetes version (a GKE version
// string, for instance, which the CNI chart reads to find GKE's CNI binary directory).
//
// Helm 4 spells Helm 3's ClientOnly+DryRun as the client dry-run strategy (what `helm install
// --dry-run=client` and `helm template` use): no API server, Helm's default capabilities with
// the given Kubernetes version.
func RenderOn(c *chart.Chart, r Release, kv common.KubeVersion) (string, error) {
	cfg := action.NewConfiguration()
	cfg.SetLogger(slog.DiscardHandler)
	inst := action.NewInstall(cfg)
	inst.DryRunStrategy, inst.IncludeCRDs = action.DryRunClient, true
	inst.ReleaseName, inst.Namespace = r.Name, r.Namespace
	inst.KubeVersion = &kv
	out, err := inst.Run(c, Clone(r.Values))
	if err != nil {
		return "", fmt.Errorf("helm install %s %s: %w", r.Name, r.Chart, err)
	}
	rel, ok := out.(*release.Release)
	if !ok {
		return "", fmt.Errorf("helm install %s %s: a %T, not a v1 release", r.Name, r.Chart, out)
	}
	return rel.Manifest, nil
}

// valuesRef finds the top-level values a chart's templates read (.Values.x, ($.Values).x).
var valuesRef = regexp.MustCompile(`\.Values\)?\.([A-Za-z_][A-Za-z0-9_]*)`)

// UnknownValues reports values the chart does not know: a key that is neither in its defaults
// (values.yaml, under _internal_defaults_do_not_set where the chart keeps them there) nor read
// by a template at the top level, or a value whose type differs from the default's. Helm
// applies a schema only where a chart ships one (of the lab's charts, only the gateway does),
// so without this a misspelt value of istiod, cni or ztunnel would be ignored in silence.
func UnknownValues(c *chart.Chart, values map[string]any) []string {
	defaults := map[string]any{}
	for k, v := range c.Values {
		defaults[k] = v
	}
	if inner, ok := defaults["_internal_defaults_do_not_set"].(map[string]any); ok {
		delete(defaults, "_internal_defaults_do_not_set")
		for k, v := range inner {
			defaults[k] = v
		}
	}
	read := map[string]bool{}
	for _, t := range c.Templates {
		for _, m := range valuesRef.FindAllStringSubmatch(string(t.Data), -1) {
			read[m[1]] = true
		}
	}
	var out []string
	for _, k := range Names(values) {
		if _, known := defaults[k]; !known && !read[k] {
			out = append(out, fmt.Sprintf("%s: not a value of the %s chart (neither in its values.yaml nor read by a template)", k, c.Name()))
			continue
		}
		out = append(out, mistyped(k, defaults[k], values[k])...)
	}
	sort.Strings(out)
	return out
}

// mistyped compares a value with the chart's default at the same path. A free-form map takes
// any keys: one whose default is empty, and Kubernetes' string maps (labels, annotations,
// selectors, env), which charts ship with a few entries. A null default takes any value.
func mistyped(p string, def, v any) []string {
	if def == nil {
		return nil
	}
	switch d := def.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T where the chart has a map", p, v)}
		}
		if len(d) == 0 || freeForm(p) {
			return nil
		}
		var out []string
		for _, k := range Names(m) {
			dv, known := d[k]
			if !known {
				out = append(out, fmt.Sprintf("%s.%s: not a value of the chart", p, k))
				continue
			}
			out = append(out, mistyped(p+"."+k, dv, m[k])...)
		}
		return out
	case []any:
		if _, ok := v.([]any); !ok {
			return []string{fmt.Sprintf("%s: %T where the chart has a list", p, v)}
		}
	case string:
		if _, ok := v.(string); !ok {
			return []string{fmt.Sprintf("%s: %v (%T) where the chart has a string", p, v, v)}
		}
	case bool:
		if _, ok := v.(bool); !ok {
			return []string{fmt.Sprintf("%s: %v (%T) where the chart has true/false", p, v, v)}
		}
	case float64, int64, int:
		if _, ok := v.(float64); !ok {
			return []string{fmt.Sprintf("%s: %v (%T) where the chart has a number", p, v, v)}
		}
	}
	return nil
}

func freeForm(p string) bool {
	last := strings.ToLower(p[strings.LastIndex(p, ".")+1:])
	for _, s := range []string{"labels", "annotations", "selector", "env"} {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	return false
}

// Objects splits a rendered manifest into objects.
func Objects(manifest string) ([]map[string]any, error) {
	var out []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(manifest, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("rendered object: %w\n%s", err, doc)
		}
		if o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// Find returns the rendered object of a kind and name.
func Find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind && Meta(o, "name") == name {
			return o
		}
	}
	return nil
}
