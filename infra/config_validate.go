package infra

// What each stack config key allows, and Validate, which checks every value against it.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/stacks"
)

// ConfigError names the config key, its value and what is allowed.
type ConfigError struct {
	Key, Value, Allowed string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("stack config %s = %q: allowed %s", configkey.Full(e.Key), e.Value, e.Allowed)
}

// intRange is the allowed values of a whole-number key.
type intRange struct {
	lo, hi int
	unit   string
}

func (r intRange) text() string {
	return strings.TrimSpace(fmt.Sprintf("%d..%d %s", r.lo, r.hi, r.unit))
}

// MaxGatewayReplicas is the most gateway pods the lab runs.
const MaxGatewayReplicas = 50

// intRanges are the whole-number keys: LoadConfig quotes the range for a value that is not a
// number at all, Validate checks it.
var intRanges = map[string]intRange{
	configkey.HostPort:         {1, 65535, ""},
	configkey.APIPort:          {1, 65535, ""},
	configkey.GatewayReplicas:  {1, MaxGatewayReplicas, "gateway pods"},
	configkey.ProxyConcurrency: {1, 64, "Envoy workers per gateway pod"},
	configkey.WaypointReplicas: {1, 20, "waypoint pods"},
}

// Validate checks every value; each error names the key, the value and what is allowed.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, value, allowed string) { errs = append(errs, &ConfigError{key, value, allowed}) }
	switch c.Cluster {
	case ClusterK3d:
		if !namePattern.MatchString(c.ClusterName) {
			bad(configkey.ClusterName, c.ClusterName, "lower-case letters, digits and dashes, at most 32 characters")
		}
		if !k3sPattern.MatchString(c.K3sImage) || !k3sCNIMoved(c.K3sImage) {
			bad(configkey.K3sImage, c.K3sImage, "a pinned k3s image of v1.31.7, v1.32.3 or later, such as rancher/k3s:v1.33.4-k3s1 (earlier ones keep the CNI binaries where Istio's k3s profile does not look)")
		}
		if c.APIPort == c.HostPort {
			bad(configkey.APIPort, fmt.Sprint(c.APIPort), "a port other than igwlab:hostPort (both are published on 127.0.0.1)")
		}
	case ClusterExisting:
		if c.RenderDir == "" && c.Kubeconfig == "" && c.KubeContext == "" {
			bad("kubeconfig", c.Kubeconfig, "a kubeconfig path (or set kubeContext) when cluster is existing")
		}
	default:
		bad(configkey.Cluster, c.Cluster, "k3d or existing")
	}
	if _, ok := Profiles[c.Profile]; !ok {
		bad(configkey.Profile, c.Profile, profilesText())
	}
	if _, ok := istioPlatform[c.Platform]; c.Platform != "" && !ok {
		bad(configkey.Platform, c.Platform, "one of "+platformsText()+" (the cluster Istio runs on: it picks Istio's platform profile and the CNI paths)")
	} else if c.Cluster == ClusterK3d && c.EffectivePlatform() != PlatformK3d {
		bad(configkey.Platform, c.Platform, "k3d (or unset) when igwlab:cluster is k3d: the program creates a k3d cluster")
	}
	for _, f := range []struct {
		key string
		v   int
	}{{configkey.HostPort, c.HostPort}, {configkey.APIPort, c.APIPort}, {configkey.GatewayReplicas, c.GatewayReplicas}, {configkey.ProxyConcurrency, c.ProxyConcurrency}, {configkey.WaypointReplicas, c.WaypointReplicas}} {
		if r := intRanges[f.key]; f.v < r.lo || f.v > r.hi {
			bad(f.key, fmt.Sprint(f.v), r.text())
		}
	}
	for _, f := range []struct {
		key string
		v   stacks.CPU
	}{{configkey.GatewayCPULimit, c.GatewayCPULimit}, {configkey.GatewayCPURequest, c.GatewayCPURequest}} {
		if f.v != 0 && f.v.Check() != nil {
			bad(f.key, f.v.String(), cpuAllowed)
		}
	}
	if limit, req := c.GatewayCPU(); req > limit {
		bad(configkey.GatewayCPURequest, req.String(), fmt.Sprintf("at most the limit, %s cores (igwlab:gatewayCpuLimit, or igwlab:proxyConcurrency without it): Kubernetes refuses a request over its limit", limit))
	}
	if istio, err := LookupIstio(c.IstioVersion); err != nil {
		errs = append(errs, err)
	} else if minor := k3sMinor(c.K3sImage); c.Cluster == ClusterK3d && minor > 0 {
		if ok, why := istio.SupportsK8s(minor); !ok {
			bad(configkey.K3sImage, c.K3sImage, "a k3s release the Istio release supports: "+why)
		}
	}
	if c.GatewayAPIVersion != "" && !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(c.GatewayAPIVersion) {
		bad(configkey.GatewayAPIVersion, c.GatewayAPIVersion, "a Gateway API release such as v1.6.0 (unset: the one the Istio release is built with)")
	}
	if !versionPattern.MatchString(c.KubePrometheusStackVersion) {
		bad(configkey.KubePrometheusStackVersion, c.KubePrometheusStackVersion, "a chart version such as 84.5.0")
	}
	cat, err := stacks.Builtin()
	if err != nil {
		return err
	}
	if _, err := cat.MustGet(c.Scenario); err != nil {
		bad("scenario", c.Scenario, "a scenario of the catalog: "+strings.Join(cat.Names(), ", "))
	}
	if !drainOK(c.GatewayDrainDuration) {
		bad("gatewayDrainDuration", c.GatewayDrainDuration.String(), drainAllowed)
	}
	errs = append(errs, c.checkH2dialImage()...)
	errs = append(errs, c.checkServiceType()...)
	if c.RenderAllScenarios && c.RenderDir == "" {
		bad(configkey.RenderAllScenarios, "true", "true only together with renderDir (every scenario's filter at once would conflict on a cluster)")
	}
	if allowed := c.Upstream.check(c.Monitoring); allowed != "" {
		bad(configkey.UpstreamDir, c.Upstream.Dir, allowed)
	}
	if c.RenderDir != "" && c.Cluster == ClusterK3d {
		bad(configkey.Cluster, c.Cluster, "existing when renderDir is set (render mode needs no cluster)")
	}
	return errors.Join(errs...)
}

// cpuAllowed is what the CPU keys take.
var cpuAllowed = fmt.Sprintf("a CPU quantity, %s..%s cores (2, 0.5 or 1500m; unset: igwlab:proxyConcurrency cores)", stacks.MinCPU, stacks.MaxCPU)
