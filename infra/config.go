// Package infra is the lab as a Pulumi program: a k3d cluster (or an existing one), Istio
// ambient, the ingress gateway, backends, load generators, monitoring with the dashboard, an
// optional waypoint, and the EnvoyFilter of the selected scenario, rendered from the stacks/
// catalog. Program is the one entry point, used by `pulumi up` and by the runner's
// Automation API alike.
package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/stacks"
)

// The kinds of cluster the program runs on (igwlab:cluster).
const (
	// ClusterK3d is a k3d cluster the program creates.
	ClusterK3d = "k3d"
	// ClusterExisting is a cluster of the user's, reached by kubeconfig and context.
	ClusterExisting = "existing"
)

// Config is the stack's configuration, read once (namespace "igwlab").
type Config struct {
	// Cluster is ClusterK3d (create one with k3d) or ClusterExisting (use Kubeconfig/KubeContext).
	Cluster     string
	ClusterName string
	K3sImage    string
	HostPort    int // host port mapped to the gateway Service's port 80 by k3d
	APIPort     int // host port of the k3d cluster's Kubernetes API (on 127.0.0.1)
	Kubeconfig  string
	KubeContext string
	// Platform is where Istio runs (igwlab:platform, platform.go): it picks Istio's platform
	// profile, and with it istio-cni's CNI paths. Empty: k3d for the cluster the program
	// creates, generic for an existing one.
	Platform string
	// GatewayServiceType is the gateway Service's type (igwlab:gatewayServiceType, exposure.go):
	// empty is LoadBalancer on k3d, whose load balancer k3d publishes on 127.0.0.1 only, and
	// ClusterIP anywhere else, so that nothing the lab runs answers outside the cluster unless
	// the stack asks for it.
	GatewayServiceType string
	// InstallGatewayAPICRDs applies the Gateway API CRDs of GatewayAPIVersion; false uses the
	// cluster's own (GKE and AKS manage them as an add-on that reverts other versions).
	InstallGatewayAPICRDs bool

	// Profile is the lab's size (igwlab:profile, profile.go): it sets GatewayReplicas and
	// BackendReplicas, which their own keys override.
	Profile      string
	IstioVersion string
	// GatewayAPIVersion is the Gateway API CRDs' release; empty is the one the Istio release
	// is built with (istioreleases.go).
	GatewayAPIVersion string
	GatewayReplicas   int
	BackendReplicas   int
	ProxyConcurrency  int
	// GatewayCPULimit and GatewayCPURequest are the gateway container's CPU limit and request
	// (0: ProxyConcurrency cores, the lab's request = limit = workers): GatewayCPU resolves them.
	GatewayCPULimit, GatewayCPURequest stacks.CPU
	WaypointReplicas                   int
	// Rollout is the pool's restart and push state (rollout.go).
	Rollout Rollout
	// GatewayDrainDuration is Istio's drainDuration for the gateway pods: how long Envoy keeps
	// a listener that an EnvoyFilter change replaced. Whole seconds (Envoy's --drain-time-s).
	GatewayDrainDuration time.Duration

	Scenario string
	// Knobs override the scenario's knobs (igwlab:knobs, a JSON object of knob path to value,
	// e.g. {"hcm.http2_protocol_options.max_concurrent_streams": "100"}), checked like the catalog.
	Knobs stacks.Knobs
	// JWKS is scenario 11's key set (JSON); empty uses Istio's sample key set by URL.
	JWKS string

	Monitoring                 bool
	KubePrometheusStackVersion string
	GrafanaPassword            pulumi.StringOutput
	grafanaPasswordSet         bool

	Images Images

	// InstallUpstream installs what is fetched from the internet: Helm charts (Istio,
	// kube-prometheus-stack) and the Gateway API CRDs. Off only where they cannot be reached.
	InstallUpstream bool
	// Upstream is where those come from: the internet, or a local folder (igwlab:upstreamDir).
	Upstream Upstream
	// BuildImages builds the h2dial image with Docker and imports it into k3d.
	BuildImages bool
	// RenderDir, when set, writes manifests there instead of applying them (the Kubernetes
	// provider's renderYamlToDirectory); no cluster is needed.
	RenderDir string
	// RenderAllScenarios renders every scenario's EnvoyFilter side by side (render mode only).
	RenderAllScenarios bool
	// SkipAwait applies workloads without waiting for them to become ready (an API server with
	// no nodes, where pods never run).
	SkipAwait bool

	// Verify runs the after-update checks (resource hooks, see verify.go): every gateway pod
	// shows the scenario's knobs and has finished draining, runs the configured workers and
	// exposes the stats the lab reads. Skipped in render mode and previews.
	Verify bool
	// VerifyTimeout bounds each check; 0 is the gateway's drain time plus DrainMargin.
	VerifyTimeout time.Duration
	// GatewayAdmins are the gateway pods' Envoy admins at base URLs the program reaches itself
	// (http://127.0.0.1:15000, ...); empty reaches them by port-forward through the Kubernetes API.
	GatewayAdmins []string
	// PrometheusURL is Prometheus's base URL for the monitoring checks; empty reaches its pod
	// by port-forward.
	PrometheusURL string
	// GatewayURL is where the waypoint check sends requests through the gateway; empty is the
	// k3d host port on 127.0.0.1, or a port-forward to a gateway pod on an existing cluster.
	GatewayURL string
	// WaypointAdmins are the waypoint pods' Envoy admins at base URLs the program reaches
	// itself; empty reaches them by port-forward.
	WaypointAdmins []string
}

// Images are the pinned container images.
type Images struct {
	HTTPBin string
	Fortio  string
	// H2dial is the lab's own image's repository (the tag is the hash of its sources): h2dial,
	// and the gRPC backend and client (grpclab), built from Go for the machine's architecture.
	H2dial string
	// H2dialPushed is that image pushed where the cluster can pull it (igwlab:h2dialImage),
	// used instead of building one into k3d: the way to run the lab on an existing cluster.
	H2dialPushed string
}

// Defaults are the lab's pins.
var Defaults = Config{
	Cluster: ClusterK3d, ClusterName: "igw-tc-lab", K3sImage: "rancher/k3s:v1.33.4-k3s1", HostPort: 18080, APIPort: 6550,
	Profile: ProfileFull, IstioVersion: DefaultIstio, InstallGatewayAPICRDs: true, GatewayReplicas: 6, BackendReplicas: 2, ProxyConcurrency: 1,
	WaypointReplicas: 3, Scenario: stacks.DefaultScenario, Monitoring: true, KubePrometheusStackVersion: "84.5.0",
	// Istio's default is 45 s. The runner waits for the drain after every scenario switch, and
	// between scenarios no load runs, so the old listener has nothing worth 45 s of waiting:
	// 5 s still lets a straggling request finish, and saves 40 s per switch.
	GatewayDrainDuration: 5 * time.Second, InstallUpstream: true, BuildImages: true, Verify: true,
	Images: Images{
		HTTPBin: "ghcr.io/mccutchen/go-httpbin:2.26.0",
		Fortio:  "fortio/fortio:1.75.3",
		H2dial:  "igwlab/h2dial",
	},
}

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	versionPattern = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	k3sPattern     = regexp.MustCompile(`^rancher/k3s:v\d+\.\d+\.\d+-k3s\d+$`)
)

// configKeys are the keys the lab reads under igwlab:. jwtKey is the runner's: scenario 11's
// signing key, kept in the stack between runs.
var configKeys = configkey.All

// checkKeys rejects an igwlab: key the lab does not read: a misspelt key would otherwise be
// ignored and the default used in silence. The SDK gives a program no list of its config, but
// the language host hands all of it over in PULUMI_CONFIG (a JSON object of key to value, with
// the secret keys in PULUMI_CONFIG_SECRET_KEYS), which is what this reads; an inline
// Automation API program has no such variable and only ever gets the keys the runner sets.
func checkKeys(all, secretKeys string) []error {
	if all == "" {
		return nil
	}
	var conf map[string]string
	if json.Unmarshal([]byte(all), &conf) != nil {
		return nil // not ours to judge: the SDK reads the same variable and reports on it
	}
	var secret []string
	_ = json.Unmarshal([]byte(secretKeys), &secret)
	known := map[string]bool{}
	for _, k := range configKeys {
		known[k] = true
	}
	var errs []error
	for _, full := range slices.Sorted(maps.Keys(conf)) {
		key, ok := strings.CutPrefix(full, configkey.Project+":")
		if !ok || known[key] {
			continue
		}
		value := conf[full]
		if slices.Contains(secret, full) {
			value = "[secret]"
		}
		if why, ok := configkey.Retired[key]; ok {
			errs = append(errs, &ConfigError{key, value, "no longer read (remove it): " + why})
			continue
		}
		allowed := "a key the lab reads"
		if s := stacks.Suggest(key, configKeys); s != "" {
			allowed += fmt.Sprintf(" (did you mean igwlab:%s?)", s)
		}
		errs = append(errs, &ConfigError{key, value, allowed + ": " + strings.Join(configKeys, ", ")})
	}
	return errs
}

// LoadConfig reads and validates the stack's configuration.
func LoadConfig(ctx *pulumi.Context) (Config, error) {
	c := config.New(ctx, configkey.Project)
	cfg, errs := parseConfig(c.Get)
	if _, err := c.TrySecret(configkey.GrafanaPassword); err == nil {
		cfg.GrafanaPassword = c.RequireSecret(configkey.GrafanaPassword)
		cfg.grafanaPasswordSet = true
	}
	errs = append(errs, checkKeys(os.Getenv(pulumi.EnvConfig), os.Getenv(pulumi.EnvConfigSecretKeys))...)
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return cfg, cfg.Validate()
}

// ParseConfig reads and validates a configuration from a getter of its plain values (a key
// without the project's namespace; "" when unset): the program's own reading, for those who
// read a stack's files without Pulumi (the doctor). Secrets are not read.
func ParseConfig(get func(key string) string) (Config, error) {
	cfg, errs := parseConfig(get)
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return cfg, cfg.Validate()
}

// parseConfig reads every plain key onto the defaults, and lists the values it cannot read.
func parseConfig(get func(key string) string) (Config, []error) {
	cfg := Defaults
	str := func(key string, dst *string) {
		if v := get(key); v != "" {
			*dst = v
		}
	}
	var errs []error
	integer := func(key string, dst *int) {
		raw := get(key)
		if raw == "" {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			errs = append(errs, &ConfigError{key, raw, "a whole number, " + intRanges[key].text()})
			return
		}
		*dst = n
	}
	boolean := func(key string, dst *bool) {
		switch raw := get(key); raw {
		case "":
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			errs = append(errs, &ConfigError{key, raw, "true or false"})
		}
	}
	// The profile first: it sets sizes the keys read after it may override.
	if v := get(configkey.Profile); v != "" {
		if _, ok := Profiles[v]; ok {
			cfg = cfg.WithProfile(v)
		} else {
			cfg.Profile = v // Validate names it
		}
	}
	str(configkey.Cluster, &cfg.Cluster)
	str(configkey.ClusterName, &cfg.ClusterName)
	str(configkey.K3sImage, &cfg.K3sImage)
	integer(configkey.HostPort, &cfg.HostPort)
	integer(configkey.APIPort, &cfg.APIPort)
	str(configkey.Kubeconfig, &cfg.Kubeconfig)
	str(configkey.KubeContext, &cfg.KubeContext)
	str(configkey.Platform, &cfg.Platform)
	str(configkey.IstioVersion, &cfg.IstioVersion)
	str(configkey.GatewayAPIVersion, &cfg.GatewayAPIVersion)
	boolean(configkey.InstallGatewayAPICRDs, &cfg.InstallGatewayAPICRDs)
	str(configkey.GatewayServiceType, &cfg.GatewayServiceType)
	integer(configkey.GatewayReplicas, &cfg.GatewayReplicas)
	integer(configkey.ProxyConcurrency, &cfg.ProxyConcurrency)
	integer(configkey.WaypointReplicas, &cfg.WaypointReplicas)
	for _, k := range []struct {
		key string
		dst *stacks.CPU
	}{{configkey.GatewayCPULimit, &cfg.GatewayCPULimit}, {configkey.GatewayCPURequest, &cfg.GatewayCPURequest}} {
		if raw := get(k.key); raw != "" {
			v, err := stacks.ParseCPU(raw)
			if err != nil || v == 0 {
				errs = append(errs, &ConfigError{k.key, raw, cpuAllowed})
				continue
			}
			*k.dst = v
		}
	}
	var rerrs []error
	cfg.Rollout, rerrs = readRollout(get)
	errs = append(errs, rerrs...)
	if raw := get(configkey.GatewayDrainDuration); raw != "" {
		d, err := ParseDrainDuration(raw)
		if err != nil {
			errs = append(errs, err)
		}
		cfg.GatewayDrainDuration = d
	}
	str(configkey.Scenario, &cfg.Scenario)
	str(configkey.JWKS, &cfg.JWKS)
	if raw := get(configkey.Knobs); raw != "" {
		k, err := ParseKnobs(raw)
		if err != nil {
			errs = append(errs, err)
		}
		cfg.Knobs = k
	}
	boolean(configkey.SkipAwait, &cfg.SkipAwait)
	boolean(configkey.Verify, &cfg.Verify)
	if raw := get(configkey.VerifyTimeout); raw != "" {
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil || d < time.Second || d > 30*time.Minute {
			errs = append(errs, &ConfigError{configkey.VerifyTimeout, raw, verifyTimeoutAllowed})
		}
		cfg.VerifyTimeout = d
	}
	// urls reads a key that holds base URLs (admins, Prometheus, the gateway): one, or (one
	// false) a comma-separated list.
	urls := func(key string, one bool, dst *[]string) {
		raw := get(key)
		if raw == "" {
			return
		}
		u, err := inforce.ParseURLs(raw)
		switch {
		case one && (err != nil || len(u) != 1):
			errs = append(errs, &ConfigError{key, raw, "one base URL such as http://127.0.0.1:9090"})
		case err != nil:
			errs = append(errs, &ConfigError{key, raw, "Envoy admin base URLs separated by commas, such as http://127.0.0.1:15000 (" + err.Error() + ")"})
		default:
			*dst = u
		}
	}
	urls(configkey.GatewayAdmins, false, &cfg.GatewayAdmins)
	urls(configkey.WaypointAdmins, false, &cfg.WaypointAdmins)
	var prom, gw []string
	urls(configkey.PrometheusURL, true, &prom)
	urls(configkey.GatewayURL, true, &gw)
	cfg.PrometheusURL, cfg.GatewayURL = strings.Join(prom, ""), strings.Join(gw, "")
	boolean(configkey.Monitoring, &cfg.Monitoring)
	str(configkey.KubePrometheusStackVersion, &cfg.KubePrometheusStackVersion)
	boolean(configkey.InstallUpstream, &cfg.InstallUpstream)
	boolean(configkey.BuildImages, &cfg.BuildImages)
	str(configkey.RenderDir, &cfg.RenderDir)
	str(configkey.UpstreamDir, &cfg.Upstream.Dir)
	boolean(configkey.RenderAllScenarios, &cfg.RenderAllScenarios)
	str(configkey.HTTPBinImage, &cfg.Images.HTTPBin)
	str(configkey.FortioImage, &cfg.Images.Fortio)
	str(configkey.H2dialImage, &cfg.Images.H2dialPushed)
	return cfg, errs
}

// WithGrafanaPassword sets the Grafana password (tests and programs that build Config by hand).
func (c Config) WithGrafanaPassword(p pulumi.StringOutput) Config {
	c.GrafanaPassword, c.grafanaPasswordSet = p, true
	return c
}

// GatewayCPU is the gateway container's CPU limit and request: the keys' values, else one core
// per worker (request = limit = concurrency, so that concurrency means what it says); a
// request left unset is the limit.
func (c Config) GatewayCPU() (limit, request stacks.CPU) {
	limit = c.GatewayCPULimit
	if limit == 0 {
		limit = stacks.CPU(c.ProxyConcurrency * 1000)
	}
	request = c.GatewayCPURequest
	if request == 0 {
		request = limit
	}
	return limit, request
}

// ScenarioOf returns the configured scenario with the lab's values.
func (c Config) ScenarioOf() (stacks.Scenario, *stacks.Catalog, error) {
	cat, err := stacks.Builtin()
	if err != nil {
		return stacks.Scenario{}, nil, err
	}
	sc, err := cat.MustGet(c.Scenario)
	if err != nil {
		return stacks.Scenario{}, nil, err
	}
	eff := sc.Lab()
	eff.Knobs = eff.Knobs.Overlay(c.Knobs)
	return eff, cat, nil
}
