package infra

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// LoadGenArgs configure the load generators.
type LoadGenArgs struct {
	Images      Images
	Build       bool // build the h2dial image and import it into k3d
	ClusterName string
	Cluster     *Cluster
	// SourceDir is the repository root the h2dial image is built from ("" = the working directory).
	SourceDir string
	SkipAwait bool
}

// LoadGenerators is the loadgen namespace, deliberately outside the mesh (the lab measures the
// clients' own HTTP/2 pools, with no proxy of their own in the way): fortio (its server as the
// idle process) and h2dial (idle until the runner execs a run of h2dial or of the gRPC client,
// both in its image). The image is the lab's own: the backend's gRPC server runs it too.
type LoadGenerators struct {
	pulumi.ResourceState
	Namespace *corev1.Namespace
	Fortio    *appsv1.Deployment
	H2dial    *appsv1.Deployment
	H2dialImg string
	// H2dialPull is the image's pull policy: Never when it was imported into k3d's nodes.
	H2dialPull string
	Build      *local.Command
}

// NewLoadGenerators creates the load generators.
func NewLoadGenerators(ctx *pulumi.Context, name string, args *LoadGenArgs, opts ...pulumi.ResourceOption) (*LoadGenerators, error) {
	c := &LoadGenerators{}
	if err := ctx.RegisterComponentResource(componentType("LoadGenerators"), name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.Namespace, err = corev1.NewNamespace(ctx, "loadgen-ns", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(LoadgenNamespace), Labels: pulumi.StringMap{
			LabPartOf: pulumi.String(LabName)}},
	}, child(c, opts)...)
	if err != nil {
		return nil, err
	}
	inNS := child(c, opts, dependsOn(c.Namespace))
	res := resources(loadgenResources)
	// fortio's image is distroless: no shell, so its server is the idle process.
	if c.Fortio, err = deployment(ctx, "fortio", LoadgenNamespace, 1, args.SkipAwait, corev1.ContainerArgs{
		Name: pulumi.String("fortio"), Image: pulumi.String(args.Images.Fortio), Args: pulumi.StringArray{pulumi.String("server")},
		Resources: res,
	}, inNS); err != nil {
		return nil, err
	}
	// A pushed image (igwlab:h2dialImage) is pulled like any other; otherwise the image is
	// built here and imported into k3d, tagged with the hash of what its Dockerfile copies, so a
	// change rebuilds and rolls the pod, and never pulled (it exists on the nodes only).
	pull := "IfNotPresent"
	c.H2dialImg = args.Images.H2dialPushed
	h2Opts := inNS
	if c.H2dialImg == "" {
		sum, err := imageSourceHash(args.SourceDir, H2dialDockerfile)
		if err != nil {
			return nil, err
		}
		c.H2dialImg, pull = args.Images.H2dial+":"+sum[:12], "Never"
		if args.Build {
			c.Build, err = local.NewCommand(ctx, "h2dial-image", &local.CommandArgs{
				Create: pulumi.Sprintf("docker build -t %s -f %s . && k3d image import %s -c %s",
					c.H2dialImg, H2dialDockerfile, c.H2dialImg, args.ClusterName),
				Dir: pulumi.String(orDot(args.SourceDir)),
				// The Dockerfile needs BuildKit (its cache mounts and platform arguments): Docker 23
				// and later use it by default, Docker 20.10 only when asked (the preflight checks).
				Environment: pulumi.StringMap{"DOCKER_BUILDKIT": pulumi.String("1")},
				Triggers:    pulumi.Array{pulumi.String(sum)},
			}, child(c, opts, dependsOn(args.Cluster))...)
			if err != nil {
				return nil, err
			}
			h2Opts = child(c, opts, dependsOn(c.Namespace, c.Build))
		}
	}
	c.H2dialPull = pull
	if c.H2dial, err = deployment(ctx, "h2dial", LoadgenNamespace, 1, args.SkipAwait, corev1.ContainerArgs{
		Name: pulumi.String("h2dial"), Image: pulumi.String(c.H2dialImg), ImagePullPolicy: pulumi.String(pull),
		Args: pulumi.StringArray{pulumi.String("-idle")}, Resources: res,
	}, h2Opts); err != nil {
		return nil, err
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"namespace": pulumi.String(LoadgenNamespace),
		"h2dialImage": pulumi.String(c.H2dialImg)})
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// RepoRoot finds the repository root (where go.mod names this module) from the working
// directory upwards: `pulumi up`, the Automation API and tests all start somewhere below it.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/igwlab/igwlab\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the igwlab repository (no go.mod for github.com/igwlab/igwlab above the working directory)")
		}
		dir = parent
	}
}
