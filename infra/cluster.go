package infra

import (
	"fmt"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ClusterArgs configure the k3d cluster.
type ClusterArgs struct {
	Name     string
	Image    string // pinned k3s image: the CNI directories istio-cni needs depend on the k3s version
	HostPort int    // host port mapped to port 80 of the cluster's load balancer
}

// Cluster is a k3d cluster (1 server, 2 agents, Traefik off, API on 127.0.0.1) made with the
// k3d CLI through local commands, and its kubeconfig.
type Cluster struct {
	pulumi.ResourceState
	Name       string
	Kubeconfig pulumi.StringOutput // secret: it holds the cluster's admin client certificate
}

// NewCluster creates (or adopts, if one of that name exists) the k3d cluster.
func NewCluster(ctx *pulumi.Context, name string, args *ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	c := &Cluster{Name: args.Name}
	if err := ctx.RegisterComponentResource(componentType("Cluster"), name, c, opts...); err != nil {
		return nil, err
	}
	// k3d is not idempotent: create only when no cluster of this name exists, so a re-run or
	// a cluster created by hand is adopted instead of failing.
	create := fmt.Sprintf("k3d cluster list %[1]s >/dev/null 2>&1 || k3d cluster create %[1]s "+
		"--image %[2]s --servers 1 --agents 2 --api-port 127.0.0.1:6550 "+
		"-p '127.0.0.1:%[3]d:80@loadbalancer' --k3s-arg '--disable=traefik@server:*' "+
		"--kubeconfig-update-default=false --kubeconfig-switch-context=false --wait --timeout 300s",
		args.Name, args.Image, args.HostPort)
	cluster, err := local.NewCommand(ctx, "k3d-cluster", &local.CommandArgs{
		Create:   pulumi.String(create),
		Delete:   pulumi.String("k3d cluster delete " + args.Name),
		Triggers: pulumi.Array{pulumi.String(args.Name), pulumi.String(args.Image), pulumi.Int(args.HostPort)},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	kc, err := local.NewCommand(ctx, "k3d-kubeconfig", &local.CommandArgs{
		Create:   pulumi.String("k3d kubeconfig get " + args.Name),
		Triggers: pulumi.Array{cluster.ID()},
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{cluster}), pulumi.AdditionalSecretOutputs([]string{"stdout"}))
	if err != nil {
		return nil, err
	}
	c.Kubeconfig = pulumi.ToSecret(kc.Stdout).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": pulumi.String(args.Name), "kubeconfig": c.Kubeconfig})
}
