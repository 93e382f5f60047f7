package infra

import (
	"fmt"
	"slices"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// ScenarioArgs configure the scenario resources.
type ScenarioArgs struct {
	Names   []string // one scenario, or all of them side by side (render mode)
	Catalog *stacks.Catalog
	JWKS    string
	Istio   *IstioAmbient
	Gateway *IngressGateway
	// Backend is the backend namespace, where an east-west scenario's waypoint filter lives.
	Backend *Backend
	// SideBySide names each filter after its scenario instead of replacing one filter.
	SideBySide bool
	// Overrides replace knobs of the selected scenario (igwlab:knobs).
	Overrides stacks.Knobs
	// Push is the config push generation the selected scenario's filter carries
	// (igwlab:gatewayPush, envoyfilter.WithPush).
	Push int
	// Checks bind the in-effect check to the filter (nil: off; never side by side).
	Checks *Checks
}

// Scenario is the selected scenario's EnvoyFilter on the gateway (and scenario 11's
// RequestAuthentication), rendered from the catalog with the lab's values. Every scenario
// renders to the same object names, so switching scenarios updates the filter in place.
type Scenario struct {
	pulumi.ResourceState
	Filters []*apiextensions.CustomResource
	// WaypointFilters are the east-west scenarios' filters on the waypoint (their knobs).
	WaypointFilters []*apiextensions.CustomResource
	Auth            []*apiextensions.CustomResource
	FilterNames     pulumi.StringArray
}

// NewScenario renders the scenario resources.
func NewScenario(ctx *pulumi.Context, name string, args *ScenarioArgs, opts ...pulumi.ResourceOption) (*Scenario, error) {
	c := &Scenario{}
	if err := ctx.RegisterComponentResource(componentType("Scenario"), name, c, opts...); err != nil {
		return nil, err
	}
	deps := child(c, opts, args.Istio.crdsReady(), dependsOn(args.Gateway.Namespace, args.Gateway.Release))
	for _, n := range args.Names {
		lab, err := args.Catalog.MustGet(n)
		if err != nil {
			return nil, err
		}
		sc := lab.Lab()
		if !args.SideBySide {
			sc.Knobs = sc.Knobs.Overlay(args.Overrides)
		}
		objName, resName := envoyfilter.DefaultName, "envoyfilter"
		if args.SideBySide {
			objName, resName = envoyfilter.DefaultName+"-"+sc.Name, "envoyfilter-"+sc.Name
		}
		obj := envoyfilter.Object(objName, sc, envoyfilter.DefaultTarget)
		if !args.SideBySide {
			envoyfilter.WithPush(obj["spec"].(map[string]any), envoyfilter.DefaultTarget, args.Push)
		}
		if err := envoyfilter.Validate(obj["spec"].(map[string]any)); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		efOpts := deps
		if !args.SideBySide {
			check, err := args.Checks.Scenario(sc.Name, sc.Knobs, args.Push, envoyfilter.DefaultTarget)
			if err != nil {
				return nil, err
			}
			efOpts = append(slices.Clip(deps), optional(check))
		}
		ef, err := object(ctx, resName, obj, efOpts)
		if err != nil {
			return nil, err
		}
		c.Filters = append(c.Filters, ef)
		c.FilterNames = append(c.FilterNames, pulumi.String(envoyfilter.DefaultTarget.Namespace+"/"+objName))
		if ew := sc.EastWest; ew != nil && ew.Via != stacks.ViaZtunnel {
			// The knobs are the waypoint's: a filter naming the waypoint's Gateway by
			// targetRefs (waypoints take no selector-based filter).
			wName, wRes := envoyfilter.WaypointName, "envoyfilter-waypoint"
			if args.SideBySide {
				wName, wRes = envoyfilter.WaypointName+"-"+sc.Name, "envoyfilter-waypoint-"+sc.Name
			}
			wobj := envoyfilter.WaypointObject(wName, sc, envoyfilter.DefaultWaypoint)
			if err := envoyfilter.Validate(wobj["spec"].(map[string]any)); err != nil {
				return nil, fmt.Errorf("scenario %s (waypoint): %w", sc.Name, err)
			}
			wdeps := child(c, opts, args.Istio.crdsReady(), dependsOn(args.Backend.Namespace))
			wf, err := object(ctx, wRes, wobj, wdeps)
			if err != nil {
				return nil, err
			}
			c.WaypointFilters = append(c.WaypointFilters, wf)
			c.FilterNames = append(c.FilterNames, pulumi.String(envoyfilter.DefaultWaypoint.Namespace+"/"+wName))
		}
		if ra := envoyfilter.RequestAuthentication(sc, envoyfilter.DefaultTarget, args.JWKS); ra != nil {
			if err := envoyfilter.ValidateRequestAuthentication(ra); err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			if args.SideBySide {
				ra["metadata"].(map[string]any)["name"] = envoyfilter.RequestAuthName + "-" + sc.Name
			}
			a, err := object(ctx, "request-authentication-"+sc.Name, ra, deps)
			if err != nil {
				return nil, err
			}
			c.Auth = append(c.Auth, a)
		}
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"scenarios": pulumi.ToStringArray(args.Names), "envoyFilters": c.FilterNames})
}

// object registers a rendered Kubernetes object (apiVersion, kind, metadata, spec).
func object(ctx *pulumi.Context, name string, obj map[string]any, opts []pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	meta := obj["metadata"].(map[string]any)
	lbl := pulumi.StringMap{}
	for k, v := range meta["labels"].(map[string]any) {
		lbl[k] = pulumi.String(fmt.Sprint(v))
	}
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String(obj["apiVersion"].(string)),
		Kind:       pulumi.String(obj["kind"].(string)),
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(meta["name"].(string)),
			Namespace: pulumi.String(meta["namespace"].(string)), Labels: lbl},
		OtherFields: kubernetes.UntypedArgs{"spec": obj["spec"]},
	}, opts...)
}
