package infra

import (
	_ "embed"
	"fmt"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// k3dClusterScript creates, checks and deletes the k3d cluster on the user's machine.
//
//go:embed k3d-cluster.sh
var k3dClusterScript string

// ClusterArgs configure the k3d cluster.
type ClusterArgs struct {
	Name     string
	Image    string // pinned k3s image: the CNI directories istio-cni needs depend on the k3s version
	HostPort int    // host port mapped to port 80 of the cluster's load balancer
	APIPort  int    // host port of the Kubernetes API (on 127.0.0.1)
	// Owner marks the cluster as this stack's (project/stack): a cluster of the same name that
	// the stack did not create is refused, never adopted.
	Owner string
	// NodeCPUs and Requested are what the lab asks of the Docker VM (Config.K3dNeeds), and
	// BuildImages whether the program builds the lab's image: the preflight holds the machine
	// to them before anything is created.
	NodeCPUs    int64
	Requested   Request
	BuildImages bool
}

// Cluster is a k3d cluster (1 server, 2 agents, Traefik off, API on 127.0.0.1) made with the
// k3d CLI through local commands, and its kubeconfig.
type Cluster struct {
	pulumi.ResourceState
	Name       string
	Kubeconfig pulumi.StringOutput // secret: it holds the cluster's admin client certificate
}

// k3dScript is how the command provider runs the script: `bash -c SCRIPT igwlab-k3d ACTION`
// (the provider appends the action). The script travels in the resource's inputs, so a
// destroy needs no checkout, and a failure names the action, not the whole script.
func k3dScript(args *ClusterArgs) (interpreter []string, env map[string]string) {
	return []string{"bash", "-c", k3dClusterScript, "igwlab-k3d"}, map[string]string{
		"IGWLAB_CLUSTER":   args.Name,
		"IGWLAB_K3S_IMAGE": args.Image,
		"IGWLAB_HOST_PORT": fmt.Sprint(args.HostPort),
		"IGWLAB_API_PORT":  fmt.Sprint(args.APIPort),
		"IGWLAB_OWNER":     args.Owner,
	}
}

// preflightEnv is the script's environment with what the lab asks of the machine.
func preflightEnv(args *ClusterArgs, env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	if args.NodeCPUs > 0 {
		out["IGWLAB_NEED_NODE_CPUS"] = fmt.Sprint(args.NodeCPUs)
		out["IGWLAB_REQUEST_MILLICPU"] = fmt.Sprint(args.Requested.CPUMilli)
		out["IGWLAB_REQUEST_MEMORY"] = fmt.Sprint(args.Requested.MemBytes)
	}
	if args.BuildImages {
		out["IGWLAB_BUILD_IMAGES"] = "1"
	}
	return out
}

// NewCluster checks the machine, then creates the k3d cluster or adopts the one this stack
// made before.
//
// The check runs on every preview and up (an invoke): Docker running with the CPUs and memory
// the lab requests (and BuildKit when it builds the lab's image), k3d 5.8 or later, the ports
// free, no same-named cluster that another owner made, and no change to a value the
// running cluster was created with (name, k3s image, ports). k3d cannot change those in
// place, and a replace would delete the cluster; so such a change is refused with the key,
// both values and what to do. For the same reason the cluster command has no triggers (which
// would replace it): its values are its environment, and an update re-runs the same checks.
func NewCluster(ctx *pulumi.Context, name string, args *ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	c := &Cluster{Name: args.Name}
	if err := ctx.RegisterComponentResource(componentType("Cluster"), name, c, opts...); err != nil {
		return nil, err
	}
	interp, env := k3dScript(args)
	// The machine's sizing goes to the preflight alone: in the cluster command's environment a
	// change of the lab's size would show as an update of the cluster in every preview.
	if _, err := local.Run(ctx, &local.RunArgs{Command: "preflight", Interpreter: interp, Environment: preflightEnv(args, env)},
		pulumi.Parent(c)); err != nil {
		return nil, fmt.Errorf("k3d cluster %s: %w", args.Name, err)
	}
	cluster, err := local.NewCommand(ctx, "k3d-cluster", &local.CommandArgs{
		Create:      pulumi.String("ensure"),
		Update:      pulumi.String("ensure"),
		Delete:      pulumi.String("delete"),
		Interpreter: pulumi.ToStringArray(interp),
		Environment: pulumi.ToStringMap(env),
	}, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	// The kubeconfig holds the admin client key: secret in the state, and not logged (the
	// provider prints a command's output by default). Its trigger is the cluster's instance
	// id, which changes only when a new cluster is made.
	kc, err := local.NewCommand(ctx, "k3d-kubeconfig", &local.CommandArgs{
		Create:   pulumi.String("k3d kubeconfig get " + args.Name),
		Logging:  local.LoggingNone,
		Triggers: pulumi.Array{cluster.Stdout},
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{cluster}), pulumi.AdditionalSecretOutputs([]string{"stdout"}))
	if err != nil {
		return nil, err
	}
	c.Kubeconfig = pulumi.ToSecret(kc.Stdout).(pulumi.StringOutput)
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": pulumi.String(args.Name), "kubeconfig": c.Kubeconfig})
}
