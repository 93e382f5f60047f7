package infra

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// BackendArgs configure the backends.
type BackendArgs struct {
	Images Images
	// LabImage is the lab's own image (the gRPC backend runs from it), with its pull policy
	// and the command that builds it into k3d (nil when it is pulled).
	LabImage, LabImagePull string
	LabImageBuild          pulumi.Resource
	SkipAwait              bool
	Waypoint               bool // route the httpbin Service through the waypoint
	Replicas               int  // of httpbin and of grpcbin each
	Istio                  *IstioAmbient
}

// Backend is go-httpbin and the lab's gRPC backend (named grpcbin, after the server the seed lab
// ran; grpclab, from the lab's own image) in an ambient namespace, and the Istio Gateway and
// VirtualServices that route the ingress gateway to them.
type Backend struct {
	pulumi.ResourceState
	Namespace      *corev1.Namespace
	HTTPBin        *appsv1.Deployment
	HTTPBinService *corev1.Service
	GRPCBin        *appsv1.Deployment
	GRPCBinService *corev1.Service
	Gateway        *apiextensions.CustomResource
	Routes         []*apiextensions.CustomResource
}

func labels(app string) pulumi.StringMap {
	return pulumi.StringMap{"app": pulumi.String(app), LabPartOf: pulumi.String(LabName)}
}

// deployment renders a small Deployment.
func deployment(ctx *pulumi.Context, name, ns string, replicas int, skipAwait bool, ctr corev1.ContainerArgs, opts []pulumi.ResourceOption) (*appsv1.Deployment, error) {
	return appsv1.NewDeployment(ctx, name, &appsv1.DeploymentArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(name), Namespace: pulumi.String(ns), Labels: labels(name),
			Annotations: awaitAnnotations(skipAwait)},
		Spec: &appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(replicas),
			Selector: &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app": pulumi.String(name)}},
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: labels(name)},
				Spec:     &corev1.PodSpecArgs{Containers: corev1.ContainerArray{ctr}},
			},
		},
	}, opts...)
}

// awaitAnnotations tells the Kubernetes provider not to wait for readiness (where no pod
// ever runs: an API server without nodes).
func awaitAnnotations(skip bool) pulumi.StringMap {
	if !skip {
		return nil
	}
	return pulumi.StringMap{"pulumi.com/skipAwait": pulumi.String("true")}
}

func resources(r podResources) *corev1.ResourceRequirementsArgs {
	return &corev1.ResourceRequirementsArgs{
		Requests: pulumi.StringMap{"cpu": pulumi.String(r.cpuReq), "memory": pulumi.String(r.memReq)},
		Limits:   pulumi.StringMap{"cpu": pulumi.String(r.cpuLim), "memory": pulumi.String(r.memLim)},
	}
}

// NewBackend creates the backends and their routes.
func NewBackend(ctx *pulumi.Context, name string, args *BackendArgs, opts ...pulumi.ResourceOption) (*Backend, error) {
	c := &Backend{}
	if err := ctx.RegisterComponentResource(componentType("Backend"), name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.Namespace, err = corev1.NewNamespace(ctx, "backend-ns", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(BackendNamespace), Labels: pulumi.StringMap{
			"istio.io/dataplane-mode": pulumi.String("ambient"), LabPartOf: pulumi.String(LabName)}},
	}, child(c, opts)...)
	if err != nil {
		return nil, err
	}
	inNS := child(c, opts, dependsOn(c.Namespace))
	if c.HTTPBin, err = deployment(ctx, "httpbin", BackendNamespace, args.Replicas, args.SkipAwait, corev1.ContainerArgs{
		Name: pulumi.String("httpbin"), Image: pulumi.String(args.Images.HTTPBin),
		// /bytes/65536 (scenario 08) needs more than go-httpbin's 1 MiB default body limit headroom.
		// /sse streams (scenario 19-sse-rotation) must outlive a window: go-httpbin's default
		// -max-duration is 10s.
		Args:      pulumi.StringArray{pulumi.String("-port=8080"), pulumi.String("-max-body-size=20971520"), pulumi.String("-max-duration=10m")},
		Ports:     corev1.ContainerPortArray{corev1.ContainerPortArgs{Name: pulumi.String("http"), ContainerPort: pulumi.Int(8080)}},
		Resources: resources(httpbinResources),
	}, inNS); err != nil {
		return nil, err
	}
	svcLabels := labels("httpbin")
	if args.Waypoint {
		// Route the Service through the waypoint, and make the ingress gateway use it too (by
		// default a gateway bypasses service waypoints).
		svcLabels["istio.io/use-waypoint"] = pulumi.String(WaypointName)
		svcLabels["istio.io/ingress-use-waypoint"] = pulumi.String("true")
	}
	if c.HTTPBinService, err = corev1.NewService(ctx, "httpbin", &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("httpbin"), Namespace: pulumi.String(BackendNamespace), Labels: svcLabels,
			Annotations: awaitAnnotations(args.SkipAwait)},
		Spec: &corev1.ServiceSpecArgs{Selector: pulumi.StringMap{"app": pulumi.String("httpbin")},
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{Name: pulumi.String("http"), Port: pulumi.Int(8080), TargetPort: pulumi.Int(8080)}}},
	}, inNS...); err != nil {
		return nil, err
	}
	grpcOpts := inNS
	if args.LabImageBuild != nil {
		grpcOpts = child(c, opts, dependsOn(c.Namespace, args.LabImageBuild))
	}
	if c.GRPCBin, err = deployment(ctx, "grpcbin", BackendNamespace, args.Replicas, args.SkipAwait, corev1.ContainerArgs{
		Name: pulumi.String("grpcbin"), Image: pulumi.String(args.LabImage), ImagePullPolicy: pulumi.String(args.LabImagePull),
		Command:   pulumi.StringArray{pulumi.String("/igwlab-grpc")},
		Args:      pulumi.StringArray{pulumi.String("serve"), pulumi.String("-addr"), pulumi.String(":9000")},
		Ports:     corev1.ContainerPortArray{corev1.ContainerPortArgs{Name: pulumi.String("grpc"), ContainerPort: pulumi.Int(9000)}},
		Resources: resources(grpcbinResources),
	}, grpcOpts); err != nil {
		return nil, err
	}
	if c.GRPCBinService, err = corev1.NewService(ctx, "grpcbin", &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("grpcbin"), Namespace: pulumi.String(BackendNamespace), Labels: labels("grpcbin"),
			Annotations: awaitAnnotations(args.SkipAwait)},
		Spec: &corev1.ServiceSpecArgs{Selector: pulumi.StringMap{"app": pulumi.String("grpcbin")},
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{Name: pulumi.String("grpc"), Port: pulumi.Int(9000),
				TargetPort: pulumi.Int(9000), AppProtocol: pulumi.String("grpc")}}},
	}, inNS...); err != nil {
		return nil, err
	}

	crd := child(c, opts, args.Istio.crdsReady())
	if c.Gateway, err = customResource(ctx, "igw-test-gateway", "networking.istio.io/v1", "Gateway", GatewayNamespace, map[string]any{
		"selector": map[string]any{"istio": "ingressgateway"},
		"servers":  []any{map[string]any{"port": map[string]any{"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": []any{"*"}}},
	}, crd); err != nil {
		return nil, err
	}
	gw := GatewayNamespace + "/igw-test-gateway"
	routes := []struct {
		name, host, dest string
		port             int
	}{
		{"httpbin", "*", "httpbin." + BackendNamespace + ".svc.cluster.local", 8080},
		{"grpcbin", "grpcbin." + BackendNamespace, "grpcbin." + BackendNamespace + ".svc.cluster.local", 9000},
	}
	for _, r := range routes {
		vs, err := customResource(ctx, r.name, "networking.istio.io/v1", "VirtualService", GatewayNamespace, map[string]any{
			"hosts":    []any{r.host},
			"gateways": []any{gw},
			"http": []any{map[string]any{"route": []any{map[string]any{"destination": map[string]any{
				"host": r.dest, "port": map[string]any{"number": r.port}}}}}},
		}, crd)
		if err != nil {
			return nil, err
		}
		c.Routes = append(c.Routes, vs)
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"namespace": pulumi.String(BackendNamespace),
		"waypoint": pulumi.Bool(args.Waypoint)})
}

// kindPrefix keeps Pulumi resource names readable where an object shares its name with another
// kind (the httpbin VirtualService and the httpbin Deployment).
var kindPrefix = map[string]string{"VirtualService": "vs-", "Gateway": "gw-", "PodMonitor": "pm-"}

// customResource renders a namespaced custom resource with a spec.
// LabPartOf and LabName mark what the lab creates (app.kubernetes.io/part-of: igwlab): its
// Prometheus selects the PodMonitors so marked, and the doctor tells them from a cluster's own.
const (
	LabPartOf = "app.kubernetes.io/part-of"
	LabName   = "igwlab"
)

func customResource(ctx *pulumi.Context, name, apiVersion, kind, ns string, spec map[string]any, opts []pulumi.ResourceOption, extraLabels ...string) (*apiextensions.CustomResource, error) {
	lbl := pulumi.StringMap{LabPartOf: pulumi.String(LabName)}
	for i := 0; i+1 < len(extraLabels); i += 2 {
		lbl[extraLabels[i]] = pulumi.String(extraLabels[i+1])
	}
	return apiextensions.NewCustomResource(ctx, kindPrefix[kind]+name, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(apiVersion),
		Kind:        pulumi.String(kind),
		Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(name), Namespace: pulumi.String(ns), Labels: lbl},
		OtherFields: kubernetes.UntypedArgs{"spec": spec},
	}, opts...)
}
