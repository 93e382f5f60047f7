package infra

import (
	"fmt"
	"strings"
	"time"

	"github.com/igwlab/igwlab/stacks"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v3"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// GatewayArgs configure the ingress gateway.
type GatewayArgs struct {
	Version     string
	Replicas    int
	Concurrency int // Envoy worker threads per pod
	// CPULimit and CPURequest are the container's resources (Config.GatewayCPU).
	CPULimit, CPURequest stacks.CPU
	// DrainDuration is how long Envoy keeps a listener an EnvoyFilter change replaced.
	DrainDuration time.Duration
	Install       bool
	Upstream      Upstream
	SkipAwait     bool
	Istio         *IstioAmbient
	// Platform is the Istio platform profile (the charts' platform value; "" for Istio's defaults).
	Platform string
	// ServiceType is the gateway Service's type (Config.gatewayServiceType, exposure.go).
	ServiceType string
	// Rollout is the pool's restart annotation and strategy (rollout.go).
	Rollout Rollout
	// Check runs after the release is created or updated (Checks.Gateway; nil: none).
	Check pulumi.ResourceOption
}

// IngressGateway is Istio's gateway chart released as istio-ingressgateway, so its pods carry
// istio: ingressgateway and its HCM stat prefix is outbound_0.0.0.0_80.
type IngressGateway struct {
	pulumi.ResourceState
	Namespace *corev1.Namespace
	Release   *helm.Release
	// Headless is the gateway pods' headless Service (GatewayHeadless).
	Headless *corev1.Service
	// ProxyConfig is the pod annotation proxy.istio.io/config.
	ProxyConfig string
	// Bootstrap is the bootstrap override the pods start with (GatewayBootstrap).
	Bootstrap *corev1.ConfigMap
}

// BootstrapOverride is what the gateway's Envoy bootstrap adds to Istio's: each worker's
// dispatcher stats (listener_manager.worker_N.dispatcher.loop_duration_us, poll_delay_us), the
// nearest thing Envoy has to per-worker CPU. Istio has no ProxyConfig field for it; its
// injection templates mount the ConfigMap the pod annotation sidecar.istio.io/bootstrapOverride
// names and set ISTIO_BOOTSTRAP_OVERRIDE, pilot-agent hands the file to Envoy as --config-yaml
// (pkg/envoy/proxy.go, envoy.args), and Envoy merges it into the bootstrap
// (InstanceUtil::loadBootstrapConfig, MergeFrom). Istio's default stats matcher keeps the
// listener_manager and server prefixes, so the histograms and the watchdog counters pass.
const BootstrapOverride = `{"enable_dispatcher_stats": true}`

// BootstrapOverrideKey is the ConfigMap key Istio's injection templates read.
const BootstrapOverrideKey = "custom_bootstrap.json"

// StatsInclusions are the proxyStatsMatcher regexes the gateway needs: Istio's default matcher
// drops listener, HCM and most cluster stats, including the per-worker ones this lab is about.
var StatsInclusions = []string{
	`.*downstream_cx.*`,
	`.*downstream_rq.*`,
	`.*downstream_flow_control.*`,
	`.*upstream_cx.*`,
	`.*upstream_rq.*`,
	`.*upstream_flow_control.*`,
	`.*http2\..*`,
	`listener\..*`,
	`.*ssl.*`,
	`server\.concurrency`,
}

// ProxyConfig renders the proxy.istio.io/config annotation: the worker count, the drain time
// (omitted when zero: Istio's default) and the stats matcher. pilot-agent reads it at start.
func ProxyConfig(concurrency int, drain time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "concurrency: %d\n", concurrency)
	if drain > 0 {
		fmt.Fprintf(&b, "drainDuration: %s\n", DurationText(drain))
	}
	b.WriteString("proxyStatsMatcher:\n  inclusionRegexps:\n")
	for _, r := range StatsInclusions {
		fmt.Fprintf(&b, "  - %q\n", r)
	}
	return b.String()
}

// NewIngressGateway installs the gateway.
func NewIngressGateway(ctx *pulumi.Context, name string, args *GatewayArgs, opts ...pulumi.ResourceOption) (*IngressGateway, error) {
	c := &IngressGateway{ProxyConfig: ProxyConfig(args.Concurrency, args.DrainDuration)}
	if err := ctx.RegisterComponentResource(componentType("IngressGateway"), name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.Namespace, err = corev1.NewNamespace(ctx, "gateway-ns", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(GatewayNamespace),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
	}, child(c, opts)...)
	if err != nil {
		return nil, err
	}
	values := pulumi.Map{
		"replicaCount": pulumi.Int(args.Replicas),
		// The chart's HPA (1..5 replicas) would shrink a lightly loaded pool under the lab.
		"autoscaling": pulumi.Map{"enabled": pulumi.Bool(false)},
		// The istio label otherwise follows the release name; the lab's selectors need this one.
		"labels": pulumi.Map{"istio": pulumi.String("ingressgateway")},
		// Never the chart's LoadBalancer by default off k3d (exposure.go).
		"service": pulumi.Map{"type": pulumi.String(args.ServiceType)},
		// By default CPU request = limit = workers, so concurrency means what it says; a limit
		// below the workers is the kernel's CFS quota throttling them (scenario 21).
		"resources": pulumi.Map{
			"requests": pulumi.Map{"cpu": pulumi.String(args.CPURequest.String()), "memory": pulumi.String(gatewayMemRequest)},
			"limits":   pulumi.Map{"cpu": pulumi.String(args.CPULimit.String()), "memory": pulumi.String(gatewayMemLimit)},
		},
	}
	// The pods mount the override, so it exists before the release creates them.
	c.Bootstrap, err = corev1.NewConfigMap(ctx, "gateway-bootstrap", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(GatewayBootstrap), Namespace: c.Namespace.Metadata.Name().Elem(),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
		Data: pulumi.StringMap{BootstrapOverrideKey: pulumi.String(BootstrapOverride)},
	}, child(c, opts)...)
	if err != nil {
		return nil, err
	}
	annotations := pulumi.Map{"proxy.istio.io/config": pulumi.String(c.ProxyConfig),
		"sidecar.istio.io/bootstrapOverride": pulumi.String(GatewayBootstrap)}
	args.Rollout.chartValues(values, annotations)
	values["podAnnotations"] = annotations
	if args.Install {
		src, repo := args.Upstream.chart("gateway", IstioChartRepo)
		c.Release, err = helm.NewRelease(ctx, GatewayRelease, &helm.ReleaseArgs{
			// A fixed release name: unset, Pulumi appends a random suffix and the pod label with it.
			Name: pulumi.String(GatewayRelease), Chart: src, Version: pulumi.String(args.Version),
			Namespace:      c.Namespace.Metadata.Name().Elem(),
			RepositoryOpts: repo, Values: withPlatform(values, args.Platform), Timeout: pulumi.Int(600), SkipAwait: releaseAwait(args.SkipAwait),
		}, child(c, opts, dependsOn(args.Istio.Istiod, args.Istio.Ztunnel, c.Namespace, c.Bootstrap), optional(args.Check))...)
		if err != nil {
			return nil, err
		}
	}
	if c.Headless, err = corev1.NewService(ctx, GatewayHeadless, &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(GatewayHeadless), Namespace: c.Namespace.Metadata.Name().Elem(),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
		Spec: &corev1.ServiceSpecArgs{
			ClusterIP: pulumi.String("None"),
			Selector:  pulumi.StringMap{"istio": pulumi.String("ingressgateway")},
			Ports: corev1.ServicePortArray{&corev1.ServicePortArgs{Name: pulumi.String("http2"), Port: pulumi.Int(80),
				TargetPort: pulumi.Int(80), AppProtocol: pulumi.String("http2")}},
		},
	}, child(c, opts)...); err != nil {
		return nil, err
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"namespace": pulumi.String(GatewayNamespace), "replicas": pulumi.Int(args.Replicas),
		"concurrency": pulumi.Int(args.Concurrency), "drainDuration": pulumi.String(DurationText(args.DrainDuration)),
		"cpuLimit": pulumi.String(args.CPULimit.String()), "cpuRequest": pulumi.String(args.CPURequest.String()),
		"serviceType": pulumi.String(args.ServiceType),
		"restartedAt": pulumi.String(args.Rollout.restartedText()),
	})
}
