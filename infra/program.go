package infra

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/stacks"
)

// Lab is everything the program builds.
type Lab struct {
	Provider   *kubernetes.Provider
	Cluster    *Cluster // nil unless cluster is k3d
	Istio      *IstioAmbient
	Gateway    *IngressGateway
	Backend    *Backend
	LoadGen    *LoadGenerators
	Monitoring *Monitoring // nil when monitoring is off
	Waypoint   *Waypoint   // nil unless the scenario uses one
	Scenario   *Scenario
}

// Namespaces of the lab.
const (
	IstioNamespace   = "istio-system"
	GatewayNamespace = "istio-ingress"
	BackendNamespace = "igw-test"
	LoadgenNamespace = "loadgen"
	MonitorNamespace = "monitoring"
	GatewayRelease   = "istio-ingressgateway"
	// GatewayHeadless is the gateway's headless Service: its DNS name answers with every
	// ready gateway pod's address, which a gRPC client's round_robin keeps a connection to each
	// of (scenario 20-grpc-round-robin), past the L4 balancer.
	GatewayHeadless = "istio-ingressgateway-headless"
	// GatewayBootstrap is the ConfigMap of the gateway's bootstrap override (BootstrapOverride).
	GatewayBootstrap = "istio-ingressgateway-bootstrap"
	WaypointName     = "igw-test-waypoint"
	// WaypointSelector finds the waypoint's pods: istiod labels the Deployment it makes for a
	// Gateway with the Gateway's name.
	WaypointSelector = "gateway.networking.k8s.io/gateway-name=" + WaypointName
	// WaypointProbePath is what the waypoint check requests through the gateway (httpbin's).
	WaypointProbePath = "/get"
	IstioChartRepo    = "https://istio-release.storage.googleapis.com/charts"
	PromChartRepo     = "https://prometheus-community.github.io/helm-charts"
	gatewayAPICRDsURL = "https://github.com/kubernetes-sigs/gateway-api/releases/download/%s/standard-install.yaml"
)

// Program is the lab's Pulumi program: `pulumi up` runs it through infra/cmd/lab, and the
// runner runs the same function through the Automation API. It reads the stack's config once.
func Program(ctx *pulumi.Context) error {
	cfg, err := LoadConfig(ctx)
	if err != nil {
		return err
	}
	_, err = Build(ctx, cfg)
	return err
}

// Build creates the lab from a validated configuration.
func Build(ctx *pulumi.Context, cfg Config) (*Lab, error) {
	sc, cat, err := cfg.ScenarioOf()
	if err != nil {
		return nil, err
	}
	if err := guardCluster(ctx, cfg); err != nil {
		return nil, err
	}
	if err := warnExposure(ctx, cfg); err != nil {
		return nil, err
	}
	lab := &Lab{}
	provArgs := &kubernetes.ProviderArgs{}
	var provDeps []pulumi.Resource
	switch {
	case cfg.RenderDir != "":
		provArgs.RenderYamlToDirectory = pulumi.StringPtr(cfg.RenderDir)
	case cfg.Cluster == ClusterK3d:
		nodeCPUs, requested := cfg.K3dNeeds()
		if lab.Cluster, err = NewCluster(ctx, "cluster", &ClusterArgs{Name: cfg.ClusterName, Image: cfg.K3sImage,
			HostPort: cfg.HostPort, APIPort: cfg.APIPort, Owner: ctx.Project() + "/" + ctx.Stack(),
			NodeCPUs: nodeCPUs, Requested: requested, BuildImages: cfg.BuildsImage()}); err != nil {
			return nil, err
		}
		provArgs.Kubeconfig = lab.Cluster.Kubeconfig
		provDeps = append(provDeps, lab.Cluster)
	default:
		if cfg.Kubeconfig != "" {
			provArgs.Kubeconfig = pulumi.StringPtr(cfg.Kubeconfig)
		}
		if cfg.KubeContext != "" {
			provArgs.Context = pulumi.StringPtr(cfg.KubeContext)
		}
	}
	var kubeconfig pulumi.StringInput
	if lab.Cluster != nil {
		kubeconfig = lab.Cluster.Kubeconfig
	}
	checks := NewChecks(ctx, cfg, kubeconfig)
	gatewayCheck, err := checks.Gateway()
	if err != nil {
		return nil, err
	}
	prov, err := kubernetes.NewProvider(ctx, "k8s", provArgs, pulumi.DependsOn(provDeps))
	if err != nil {
		return nil, err
	}
	lab.Provider = prov
	opts := []pulumi.ResourceOption{pulumi.Provider(prov)}

	var ztEnv map[string]string
	if sc.EastWest != nil {
		ztEnv = sc.EastWest.Ztunnel.Env()
	}
	if lab.Istio, err = NewIstioAmbient(ctx, "istio", &IstioArgs{Version: cfg.IstioVersion,
		GatewayAPIVersion: cfg.gatewayAPIVersion(), GatewayAPICRDs: cfg.InstallGatewayAPICRDs, Install: cfg.InstallUpstream, Upstream: cfg.Upstream, SkipAwait: cfg.SkipAwait,
		Platform: cfg.istioProfile(), ZtunnelEnv: ztEnv}, opts...); err != nil {
		return nil, err
	}
	gwLimit, gwRequest := cfg.GatewayCPU()
	if lab.Gateway, err = NewIngressGateway(ctx, "gateway", &GatewayArgs{Version: cfg.IstioVersion,
		Replicas: cfg.GatewayReplicas, Concurrency: cfg.ProxyConcurrency, DrainDuration: cfg.GatewayDrainDuration,
		CPULimit: gwLimit, CPURequest: gwRequest,
		Install: cfg.InstallUpstream, Upstream: cfg.Upstream, SkipAwait: cfg.SkipAwait, Istio: lab.Istio, Platform: cfg.istioProfile(),
		ServiceType: cfg.gatewayServiceType(), Rollout: cfg.Rollout, Check: gatewayCheck}, opts...); err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	// The load generators first: they build the lab's own image, which the backend runs too.
	if lab.LoadGen, err = NewLoadGenerators(ctx, "loadgen", &LoadGenArgs{Images: cfg.Images,
		Build: cfg.BuildsImage(), ClusterName: cfg.ClusterName,
		Cluster: lab.Cluster, SourceDir: root, SkipAwait: cfg.SkipAwait}, opts...); err != nil {
		return nil, err
	}
	var build pulumi.Resource
	if lab.LoadGen.Build != nil {
		build = lab.LoadGen.Build
	}
	// The waypoint serves ingress through it (waypoint: true) and east-west traffic through it
	// (east_west, unless via ztunnel alone).
	useWaypoint := sc.Waypoint || (sc.EastWest != nil && sc.EastWest.Via != stacks.ViaZtunnel)
	if lab.Backend, err = NewBackend(ctx, "backend", &BackendArgs{Images: cfg.Images, Waypoint: useWaypoint, SkipAwait: cfg.SkipAwait, Replicas: cfg.BackendReplicas,
		Istio: lab.Istio, LabImage: lab.LoadGen.H2dialImg, LabImagePull: lab.LoadGen.H2dialPull, LabImageBuild: build}, opts...); err != nil {
		return nil, err
	}
	if useWaypoint {
		check, err := checks.Waypoint()
		if err != nil {
			return nil, err
		}
		if lab.Waypoint, err = NewWaypoint(ctx, "waypoint", &WaypointArgs{Replicas: cfg.WaypointReplicas,
			Istio: lab.Istio, Backend: lab.Backend, Check: check}, opts...); err != nil {
			return nil, err
		}
	}
	if cfg.Monitoring {
		if lab.Monitoring, err = NewMonitoring(ctx, "monitoring", &MonitoringArgs{ChartVersion: cfg.KubePrometheusStackVersion,
			Install: cfg.InstallUpstream, Upstream: cfg.Upstream, GrafanaPassword: cfg.GrafanaPassword, GrafanaPasswordSet: cfg.grafanaPasswordSet,
			Checks: checks, Waypoint: useWaypoint, Sources: map[string]pulumi.Resource{
				"igw-envoy": lab.Gateway.Release, "ztunnel": lab.Istio.Ztunnel, "waypoint-envoy": waypointResource(lab.Waypoint)}}, opts...); err != nil {
			return nil, err
		}
	}
	scenarios := []string{sc.Name}
	if cfg.RenderAllScenarios {
		scenarios = cat.Names()
	}
	if lab.Scenario, err = NewScenario(ctx, "scenario", &ScenarioArgs{Names: scenarios, Catalog: cat,
		JWKS: cfg.JWKS, Istio: lab.Istio, Gateway: lab.Gateway, Backend: lab.Backend, SideBySide: cfg.RenderAllScenarios,
		Overrides: cfg.Knobs, Push: cfg.Rollout.Push, Checks: checks}, opts...); err != nil {
		return nil, err
	}

	ctx.Export("scenario", pulumi.String(sc.Name))
	ctx.Export("gatewayUrl", pulumi.String(cfg.HostGatewayURL()))
	ctx.Export("gatewayNamespace", pulumi.String(GatewayNamespace))
	ctx.Export("envoyFilter", lab.Scenario.FilterNames)
	ctx.Export("proxyConcurrency", pulumi.Int(cfg.ProxyConcurrency))
	ctx.Export("gatewayReplicas", pulumi.Int(cfg.GatewayReplicas))
	// The HTTP/2 defaults the gateway inherits for knobs a scenario leaves unset follow the
	// Envoy release this Istio ships (stacks.EnvoyReleases).
	ctx.Export("envoyDefaults", pulumi.String(stacks.EnvoyForIstio(cfg.IstioVersion).Envoy))
	ctx.Export("gatewayDrainDuration", pulumi.String(DurationText(cfg.GatewayDrainDuration)))
	if lab.Cluster != nil {
		// The kubeconfig stays a secret; `igwlab kubeconfig` writes it to a file or merges it
		// into ~/.kube/config, and kubeContext is the context name it carries.
		ctx.Export("kubeconfig", lab.Cluster.Kubeconfig)
		ctx.Export("kubeContext", pulumi.String("k3d-"+cfg.ClusterName))
		ctx.Export(K3dClusterOutput, pulumi.String(cfg.ClusterName))
	}
	if cfg.RenderDir == "" {
		// The kube-system namespace's UID names the cluster the stack applies to, whatever
		// kubeconfig or address reaches it: the runner checks it measures that one
		// (runner/gateway/cluster/onecluster.go). Read, never managed.
		ns, err := corev1.GetNamespace(ctx, "kube-system", pulumi.ID("kube-system"), nil, opts...)
		if err != nil {
			return nil, err
		}
		ctx.Export(ClusterUIDOutput, ns.Metadata.Uid())
	}
	return lab, nil
}

// BuildsImage reports whether the program builds the lab's image and imports it into k3d.
func (c Config) BuildsImage() bool {
	return c.BuildImages && c.Images.H2dialPushed == "" && c.Cluster == ClusterK3d && c.RenderDir == ""
}

// ClusterUIDOutput is the stack output that holds the kube-system namespace's UID.
const ClusterUIDOutput = "clusterUid"

// waypointResource is the waypoint component, or nil when the scenario has none.
func waypointResource(w *Waypoint) pulumi.Resource {
	if w == nil {
		return nil
	}
	return w
}

// dependsOn skips nil resources (parts that are switched off).
func dependsOn(rs ...pulumi.Resource) pulumi.ResourceOption {
	var out []pulumi.Resource
	for _, r := range rs {
		if r != nil && !isNilResource(r) {
			out = append(out, r)
		}
	}
	return pulumi.DependsOn(out)
}
