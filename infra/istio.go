package infra

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v3"
	yamlv2 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/yaml/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// IstioArgs configure Istio ambient.
type IstioArgs struct {
	Version           string
	GatewayAPIVersion string
	// GatewayAPICRDs applies the Gateway API CRDs of GatewayAPIVersion; false leaves the
	// cluster's own in place (GKE and AKS manage them, and revert or conflict with another
	// version applied over theirs).
	GatewayAPICRDs bool
	// Install is false where the charts cannot be fetched: nothing is installed then, and
	// Istio's custom resources are rendered without waiting on its CRDs.
	Install bool
	// Upstream is where the charts and the Gateway API CRDs come from.
	Upstream Upstream
	// SkipAwait installs the charts without waiting for their workloads.
	SkipAwait bool
	// Platform is the Istio platform profile every release gets (the charts' platform value; "" for
	// Istio's defaults): it sets istio-cni's CNI paths for the cluster's nodes.
	Platform string
	// ZtunnelEnv is the ztunnel container's environment the scenario sets (the chart's env
	// value: ZTUNNEL_WORKER_THREADS and the HBONE pool's settings, stacks.Ztunnel.Env); empty
	// leaves ztunnel's defaults.
	ZtunnelEnv map[string]string
}

// IstioAmbient is Istio's ambient data plane from its Helm charts, in the documented order:
// base (CRDs), the Gateway API CRDs, istiod, istio-cni (with the platform's CNI paths), ztunnel.
type IstioAmbient struct {
	pulumi.ResourceState
	Base           *helm.Release
	GatewayAPICRDs *yamlv2.ConfigFile
	Istiod         *helm.Release
	CNI            *helm.Release
	Ztunnel        *helm.Release
}

// NewIstioAmbient installs Istio ambient.
func NewIstioAmbient(ctx *pulumi.Context, name string, args *IstioArgs, opts ...pulumi.ResourceOption) (*IstioAmbient, error) {
	c := &IstioAmbient{}
	if err := ctx.RegisterComponentResource(componentType("IstioAmbient"), name, c, opts...); err != nil {
		return nil, err
	}
	if !args.Install {
		return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"installed": pulumi.Bool(false)})
	}
	release := func(rname, chart string, values pulumi.Map, deps ...pulumi.Resource) (*helm.Release, error) {
		src, repo := args.Upstream.chart(chart, IstioChartRepo)
		return helm.NewRelease(ctx, rname, &helm.ReleaseArgs{
			Name: pulumi.String(rname), Chart: src, Version: pulumi.String(args.Version),
			Namespace: pulumi.String(IstioNamespace), CreateNamespace: pulumi.Bool(true),
			RepositoryOpts: repo, Values: withPlatform(values, args.Platform), Timeout: pulumi.Int(600), SkipAwait: releaseAwait(args.SkipAwait),
		}, child(c, opts, dependsOn(deps...))...)
	}
	var err error
	if c.Base, err = release("istio-base", "base", pulumi.Map{}); err != nil {
		return nil, err
	}
	if args.GatewayAPICRDs {
		if c.GatewayAPICRDs, err = yamlv2.NewConfigFile(ctx, "gateway-api-crds", &yamlv2.ConfigFileArgs{
			File: pulumi.String(args.Upstream.gatewayAPICRDs(args.GatewayAPIVersion)),
		}, child(c, opts)...); err != nil {
			return nil, err
		}
	}
	if c.Istiod, err = release("istiod", "istiod", pulumi.Map{"profile": pulumi.String("ambient")}, c.Base, gatewayAPICRDs(c)); err != nil {
		return nil, err
	}
	// The CNI paths come from the platform profile (platform.go).
	if c.CNI, err = release("istio-cni", "cni", pulumi.Map{"profile": pulumi.String("ambient")}, c.Istiod); err != nil {
		return nil, err
	}
	zt := pulumi.Map{}
	if len(args.ZtunnelEnv) > 0 {
		zt["env"] = pulumi.ToStringMap(args.ZtunnelEnv)
	}
	if c.Ztunnel, err = release("ztunnel", "ztunnel", zt, c.CNI); err != nil {
		return nil, err
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"installed": pulumi.Bool(true), "version": pulumi.String(args.Version)})
}

// crdsReady returns what Istio's custom resources must wait for (nothing when not installed).
func (c *IstioAmbient) crdsReady() pulumi.ResourceOption {
	if c == nil || c.Base == nil {
		return dependsOn()
	}
	return dependsOn(c.Base)
}

// gatewayAPIReady returns what Gateway API resources must wait for: the CRDs the lab applies,
// and istiod; with the cluster's own CRDs, istiod alone.
func (c *IstioAmbient) gatewayAPIReady() pulumi.ResourceOption {
	if c == nil || c.Istiod == nil {
		return dependsOn()
	}
	return dependsOn(gatewayAPICRDs(c), c.Istiod)
}

// gatewayAPICRDs is the CRDs' resource, or nil when the cluster's own are used.
func gatewayAPICRDs(c *IstioAmbient) pulumi.Resource {
	if c.GatewayAPICRDs == nil {
		return nil
	}
	return c.GatewayAPICRDs
}
