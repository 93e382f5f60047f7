package infra

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// WaypointArgs configure the waypoint.
type WaypointArgs struct {
	Replicas int
	Istio    *IstioAmbient
	Backend  *Backend
	// Check runs after the waypoint's Gateway is created or updated (Checks.Waypoint; nil:
	// none). The Gateway waits for the httpbin Service, whose labels route it through the
	// waypoint, so the check sees both.
	Check pulumi.ResourceOption
}

// Waypoint is the ambient waypoint for the backend namespace (the equivalent of istioctl
// waypoint apply), scaled through its parameters ConfigMap, with the same stats matcher as the
// gateway. A waypoint takes no EnvoyFilter that selects pods by label, only one that names its
// Gateway by targetRefs: an east-west scenario's knobs reach it that way (NewScenario,
// envoyfilter.WaypointObject); an ingress scenario's change only the gateway.
type Waypoint struct {
	pulumi.ResourceState
	Gateway    *apiextensions.CustomResource
	Parameters *corev1.ConfigMap
}

// NewWaypoint creates the waypoint.
func NewWaypoint(ctx *pulumi.Context, name string, args *WaypointArgs, opts ...pulumi.ResourceOption) (*Waypoint, error) {
	c := &Waypoint{}
	if err := ctx.RegisterComponentResource(componentType("Waypoint"), name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.Parameters, err = corev1.NewConfigMap(ctx, "waypoint-params", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(WaypointName + "-params"), Namespace: pulumi.String(BackendNamespace),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
		Data: pulumi.StringMap{"deployment": pulumi.Sprintf("spec:\n  replicas: %d\n", args.Replicas)},
	}, child(c, opts, dependsOn(args.Backend.Namespace))...)
	if err != nil {
		return nil, err
	}
	c.Gateway, err = customResource(ctx, WaypointName, "gateway.networking.k8s.io/v1", "Gateway", BackendNamespace, map[string]any{
		"gatewayClassName": "istio-waypoint",
		"listeners":        []any{map[string]any{"name": "mesh", "port": 15008, "protocol": "HBONE"}},
		"infrastructure": map[string]any{
			"annotations":   map[string]any{"proxy.istio.io/config": ProxyConfig(2, 0)},
			"parametersRef": map[string]any{"group": "", "kind": "ConfigMap", "name": WaypointName + "-params"},
		},
	}, child(c, opts, args.Istio.gatewayAPIReady(), dependsOn(c.Parameters, args.Backend.HTTPBinService), optional(args.Check)), "istio.io/waypoint-for", "service")
	if err != nil {
		return nil, err
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": pulumi.String(WaypointName), "replicas": pulumi.Int(args.Replicas)})
}
