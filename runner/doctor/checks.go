package doctor

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/igwlab/igwlab/infra"
)

// MinK3d is the oldest k3d the cluster script supports (infra/k3d-cluster.sh K3D_MIN).
const MinK3d = "5.8.0"

// Options are what the doctor checks against.
type Options struct {
	// Stack is the stack's config, read from its files (ReadStack) or through Pulumi (ForStack).
	Stack Stack
	Tools Tools
	// PortBusy reports whether a port on 127.0.0.1 is taken.
	PortBusy func(port int) bool
	// Cluster reaches a cluster of the user's (igwlab:cluster existing) with a kubeconfig and
	// context and reads it; nil skips those checks.
	Cluster func(ctx context.Context, kubeconfig, kubeContext string) (ClusterFacts, error)
	// ProjectDir is the Pulumi project's folder, where the stack is looked up ("": here).
	ProjectDir string
	// StackOpen says the stack is open already (up and suite): logged in, the stack there.
	StackOpen bool
}

// Run runs every check and returns them all, so that one run shows everything to fix. It
// creates and changes nothing: no stack, no cluster, no file.
func Run(ctx context.Context, o Options) Report {
	cfg := o.Stack.Config
	r := Report{configCheck(o.Stack)}
	k3d := cfg.Cluster == infra.ClusterK3d
	if k3d {
		r = append(r, dockerChecks(ctx, o)...)
		k := versionCheck(ctx, o.Tools, "k3d", MinK3d, k3dVersion, "install k3d "+MinK3d+" or later (https://k3d.io/#installation)")
		r = append(r, k)
		if k.Status == OK {
			r = append(r, labClusterCheck(ctx, o))
		}
	}
	r = append(r, pulumiChecks(ctx, o)...)
	// The lab runs without kubectl, but every step of the README that looks at it uses it.
	kubectl := toolCheck(o.Tools, "kubectl", "install kubectl (https://kubernetes.io/docs/tasks/tools/): the real lab's steps in the guide and the lab's messages use it")
	if kubectl.Status == Fail {
		kubectl.Status = Warn
	}
	r = append(r, kubectl)
	if k3d {
		for _, p := range []struct {
			key  string
			port int
		}{{"hostPort", cfg.HostPort}, {"apiPort", cfg.APIPort}} {
			r = append(r, portCheck(ctx, o, p.key, p.port))
		}
	} else if o.Cluster != nil {
		facts, err := o.Cluster(ctx, cfg.Kubeconfig, cfg.KubeContext)
		r = append(r, clusterChecks(ctx, o, facts, err)...)
	}
	return r
}

func toolCheck(t Tools, name, fix string) Check {
	if path, err := t.LookPath(name); err != nil {
		return Check{name, Fail, "not found on PATH", fix}
	} else {
		return Check{name, OK, path, ""}
	}
}

// versionCheck finds a tool, reads its version and holds it to a minimum.
func versionCheck(ctx context.Context, t Tools, name, min string, read func(context.Context, Tools) (string, error), fix string) Check {
	if c := toolCheck(t, name, fix); c.Status != OK {
		return c
	}
	v, err := read(ctx, t)
	if err != nil {
		return Check{name, Fail, "its version could not be read: " + err.Error(), fix}
	}
	if !atLeast(v, min) {
		return Check{name, Fail, fmt.Sprintf("%s is older than %s", v, min), fix}
	}
	return Check{name, OK, v, ""}
}

func atLeast(v, min string) bool {
	sv := "v" + strings.TrimPrefix(v, "v")
	return semver.IsValid(sv) && semver.Compare(sv, "v"+min) >= 0
}

// k3dVersion reads `k3d version` ("k3d version v5.8.3" on its first line).
func k3dVersion(ctx context.Context, t Tools) (string, error) {
	out, err := t.Output(ctx, "k3d", "version")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "k3d version "); ok {
			return strings.Fields(v)[0], nil
		}
	}
	return "", fmt.Errorf("no \"k3d version\" line in %q", out)
}

// pulumiVersion reads `pulumi version` ("v3.274.1").
func pulumiVersion(ctx context.Context, t Tools) (string, error) {
	out, err := t.Output(ctx, "pulumi", "version")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func summary(pods []string) string {
	n := map[string]int{}
	var order []string
	for _, p := range pods {
		if n[p] == 0 {
			order = append(order, p)
		}
		n[p]++
	}
	var parts []string
	for _, p := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[p], p))
	}
	return strings.Join(parts, ", ")
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func oneLine(err error, out string) string {
	s := strings.TrimSpace(out)
	if err != nil {
		s = strings.TrimSpace(err.Error() + " " + s)
	}
	return strings.Join(strings.Fields(s), " ")
}
