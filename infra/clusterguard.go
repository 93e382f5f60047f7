package infra

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/internal/configkey"
)

// K3dClusterOutput is the stack output that names the k3d cluster a stack holds (only a stack
// whose program created or adopted one exports it).
const K3dClusterOutput = "k3dCluster"

// heldK3d reads which k3d cluster the stack's last update left it holding: its own outputs,
// through a reference to itself (the engine reads the stack's latest checkpoint; a stack with
// no update yet has none). Stacks older than K3dClusterOutput show it in kubeContext, which
// only a k3d lab exports ("k3d-<name>").
func heldK3d(ctx *pulumi.Context) (string, error) {
	self := fmt.Sprintf("%s/%s/%s", ctx.Organization(), ctx.Project(), ctx.Stack())
	ref, err := pulumi.NewStackReference(ctx, "self", &pulumi.StackReferenceArgs{Name: pulumi.String(self)})
	if err != nil {
		return "", err
	}
	for _, key := range []string{K3dClusterOutput, "kubeContext"} {
		out, err := ref.GetOutputDetails(key)
		if err != nil {
			return "", fmt.Errorf("reading stack %s's last outputs: %w", self, err)
		}
		v := out.Value
		if v == nil {
			v = out.SecretValue
		}
		if name, ok := v.(string); ok && name != "" {
			if key == K3dClusterOutput {
				return name, nil
			}
			if n, ok := strings.CutPrefix(name, "k3d-"); ok {
				return n, nil
			}
		}
	}
	return "", nil
}

// guardCluster refuses, before anything is registered, a configuration that would take a
// stack's k3d cluster away: with igwlab:cluster no longer k3d, the program would stop
// registering the cluster, and the engine would delete it (the whole lab with it) and create
// every Kubernetes resource on the other cluster. One stack holds one cluster; another cluster
// gets a stack of its own.
func guardCluster(ctx *pulumi.Context, cfg Config) error {
	held, err := heldK3d(ctx)
	if err != nil || held == "" || cfg.Cluster == ClusterK3d {
		return err
	}
	stack := ctx.Stack()
	return &ConfigError{configkey.Cluster, cfg.Cluster, fmt.Sprintf(
		"k3d while stack %[1]s holds the k3d cluster %[2]s: this update would delete that cluster, and everything in it, and move every resource to the other cluster. "+
			"One stack per cluster: set it back (pulumi config set igwlab:cluster k3d -s %[1]s) and give the other cluster a stack of its own "+
			"(pulumi stack init gke, then pulumi config set igwlab:cluster existing -s gke and its kubeconfig, context and platform), "+
			"or remove the k3d lab first (pulumi destroy -s %[1]s)", stack, held)}
}
