package istioproof

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pkg/bootstrap"
	"istio.io/istio/pkg/config/mesh"
	_ "istio.io/istio/pkg/config/xds" // registers the typed configs the bootstrap carries
	"istio.io/istio/pkg/util/protomarshal"
)

// TestGatewayBootstrapTurnsOnDispatcherStats follows the lab's bootstrap override from the
// program to the Envoy bootstrap, with Istio's own code at each step:
//   - Istio's injector, on the gateway Deployment the chart renders with the lab's pod
//     annotation, mounts the ConfigMap the annotation names and points ISTIO_BOOTSTRAP_OVERRIDE
//     at its key (the gateway injection template);
//   - Istio's bootstrap (pkg/bootstrap, the template pilot-agent renders, with the proxy config
//     the injector hands it) merged with that key's content as Envoy merges --config-yaml
//     (InstanceUtil::loadBootstrapConfig: bootstrap.MergeFrom(override), proto merge) has
//     enable_dispatcher_stats, passes go-control-plane's validation, and its stats matcher keeps
//     the workers' dispatcher histograms and watchdog counters.
func TestGatewayBootstrapTurnsOnDispatcherStats(t *testing.T) {
	in, _, _ := loadLab(t)
	injected, r := injectedGateway(t)
	name := fmt.Sprint(r.Values["podAnnotations"].(map[string]any)["sidecar.istio.io/bootstrapOverride"])
	var data map[string]any
	for _, o := range in.Objects {
		if o["kind"] == "ConfigMap" && o["metadata"].(map[string]any)["name"] == name {
			data, _ = o["data"].(map[string]any)
		}
	}
	if data == nil {
		t.Fatalf("the program makes no ConfigMap %q, which the gateway's bootstrapOverride annotation names", name)
	}

	// Where the injected pod finds the override.
	spec := injected.Spec.Template.Spec
	var file string
	var mounts []corev1.VolumeMount
	for _, c := range spec.Containers {
		if c.Name != "istio-proxy" {
			continue
		}
		mounts = c.VolumeMounts
		for _, e := range c.Env {
			if e.Name == "ISTIO_BOOTSTRAP_OVERRIDE" {
				file = e.Value
			}
		}
	}
	if file == "" {
		t.Fatal("the injected istio-proxy has no ISTIO_BOOTSTRAP_OVERRIDE: the annotation did not reach the injector")
	}
	i := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.MountPath == path.Dir(file) })
	if i < 0 {
		t.Fatalf("nothing is mounted at %s", path.Dir(file))
	}
	v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mounts[i].Name })
	if v < 0 || spec.Volumes[v].ConfigMap == nil || spec.Volumes[v].ConfigMap.Name != name {
		t.Fatalf("volume %s is not ConfigMap %s", mounts[i].Name, name)
	}
	override, ok := data[path.Base(file)].(string)
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s, the file pilot-agent reads", name, path.Base(file))
	}

	// The bootstrap pilot-agent renders, with the proxy config the injector gave the pod.
	var proxyConfig string
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if c.Name == "istio-proxy" && e.Name == "PROXY_CONFIG" {
				proxyConfig = e.Value
			}
		}
	}
	pc, err := mesh.ApplyProxyConfig(proxyConfig, mesh.DefaultMeshConfig())
	if err != nil {
		t.Fatal(err)
	}
	pcfg := pc.GetDefaultConfig()
	pcfg.ConfigPath = t.TempDir()
	node, err := bootstrap.GetNodeMetaData(bootstrap.MetadataOptions{
		ID:          "router~10.0.0.1~" + r.Name + "-0." + r.Namespace + "~" + r.Namespace + ".svc.cluster.local",
		Envs:        []string{"ISTIO_META_CLUSTER_ID=Kubernetes"},
		InstanceIPs: []string{"10.0.0.1"}, ProxyConfig: pcfg, EnvoyPrometheusPort: 15090, EnvoyStatusPort: 15021,
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bootstrap.New(bootstrap.Config{Node: node}).WriteTo(bootstrapTemplate(t), &buf); err != nil {
		t.Fatal(err)
	}
	boot := &bootstrapv3.Bootstrap{}
	if err := protomarshal.Unmarshal(buf.Bytes(), boot); err != nil {
		t.Fatalf("Istio's bootstrap: %v", err)
	}
	if boot.GetEnableDispatcherStats() {
		t.Fatal("Istio's own bootstrap already turns dispatcher stats on: the override proves nothing")
	}
	// pilot-agent reads the file as YAML (pkg/envoy/proxy.go, readBootstrapToJSON).
	j, err := yaml.YAMLToJSON([]byte(override))
	if err != nil {
		t.Fatal(err)
	}
	ov := &bootstrapv3.Bootstrap{}
	if err := protomarshal.Unmarshal(j, ov); err != nil {
		t.Fatalf("the override is not a Bootstrap: %v", err)
	}
	proto.Merge(boot, ov)
	if !boot.GetEnableDispatcherStats() {
		t.Error("the merged bootstrap has no enable_dispatcher_stats")
	}
	if err := boot.Validate(); err != nil {
		t.Errorf("the merged bootstrap fails validation: %v", err)
	}
	// Envoy matches the full stat name against the inclusion list.
	for _, stat := range []string{"listener_manager.worker_0.dispatcher.loop_duration_us", "listener_manager.worker_0.dispatcher.poll_delay_us",
		"server.worker_0.watchdog_miss", "server.worker_0.watchdog_mega_miss"} {
		if !included(boot, stat) {
			t.Errorf("the gateway's stats matcher drops %s", stat)
		}
	}
}

// included reports whether the bootstrap's stats matcher keeps stat (prefix and suffix
// patterns, as Istio's inclusion list uses them; regexes are Istio's and the lab's, checked
// elsewhere).
func included(b *bootstrapv3.Bootstrap, stat string) bool {
	for _, p := range b.GetStatsConfig().GetStatsMatcher().GetInclusionList().GetPatterns() {
		if pre := p.GetPrefix(); pre != "" && strings.HasPrefix(stat, pre) || p.GetSuffix() != "" && strings.HasSuffix(stat, p.GetSuffix()) {
			return true
		}
	}
	return false
}

// bootstrapTemplate is the bootstrap template of the Istio module this module builds against
// (tools/packaging/common/envoy_bootstrap.json, what the proxy image installs).
func bootstrapTemplate(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/istio").Output()
	if err != nil {
		t.Fatalf("go list -m istio.io/istio: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "tools", "packaging", "common", "envoy_bootstrap.json")
}
