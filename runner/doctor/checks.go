package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// MinK3d is the oldest k3d the cluster script supports (infra/k3d-cluster.sh K3D_MIN).
const MinK3d = "5.8.0"

// Cluster is what the doctor reads of a cluster of the user's.
type Cluster interface {
	// Identity is the API server's address and the kube-system namespace's UID, which names
	// one cluster whatever kubeconfig reaches it.
	Identity(ctx context.Context) (server, uid string, err error)
	// Allocatable is the CPU (millicores) every schedulable node offers.
	Allocatable(ctx context.Context) ([]int64, error)
}

// Options are what the doctor checks against.
type Options struct {
	Config infra.Config // the stack's config: the cluster kind, the ports, what the lab requests
	Tools  Tools
	// PortBusy reports whether a port on 127.0.0.1 is taken.
	PortBusy func(port int) bool
	// Cluster reaches the user's cluster (igwlab:cluster existing); nil skips those checks.
	Cluster Cluster
}

// Run runs every check and returns them all, so that one run shows everything to fix.
func Run(ctx context.Context, o Options) Report {
	var r Report
	k3d := o.Config.Cluster == infra.ClusterK3d
	if k3d {
		r = append(r, dockerChecks(ctx, o)...)
		r = append(r, versionCheck(ctx, o.Tools, "k3d", MinK3d, k3dVersion, "install k3d "+MinK3d+" or later (https://k3d.io/#installation)"))
	}
	r = append(r, versionCheck(ctx, o.Tools, "pulumi", pulumistack.MinCLI, pulumiVersion,
		"install the Pulumi CLI "+pulumistack.MinCLI+" or later (https://www.pulumi.com/docs/install/): older ones only warn when the lab's checks fail"))
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
		}{{"hostPort", o.Config.HostPort}, {"apiPort", o.Config.APIPort}} {
			r = append(r, portCheck(ctx, o, p.key, p.port))
		}
	} else if o.Cluster != nil {
		r = append(r, clusterChecks(ctx, o)...)
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

// dockerChecks: Docker reachable, and its VM's CPUs and memory against what the lab requests on
// k3d's nodes, each of which reports the whole VM as its own.
func dockerChecks(ctx context.Context, o Options) Report {
	const fixDocker = "install Docker (Docker Engine, Docker Desktop, colima) and start it"
	if c := toolCheck(o.Tools, "docker", fixDocker); c.Status != OK {
		return Report{c}
	}
	out, err := o.Tools.Output(ctx, "docker", "info", "--format", "{{.NCPU}} {{.MemTotal}} {{.ServerVersion}}")
	f := strings.Fields(out)
	if err != nil || len(f) < 3 {
		return Report{{"docker", Fail, fmt.Sprintf("Docker is not reachable (docker info: %v)", oneLine(err, out)), "start Docker, then run this again"}}
	}
	ncpu, err1 := strconv.Atoi(f[0])
	mem, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Report{{"docker", Fail, fmt.Sprintf("docker info gave %q, not CPUs and memory", out), fixDocker}}
	}
	r := Report{{"docker", OK, fmt.Sprintf("Docker %s, %d CPUs, %s", f[2], ncpu, gib(mem)), ""}}
	r = append(r, cpuCheck(o.Config, infra.K3dNodes, infra.Nodes(infra.K3dNodes, int64(ncpu)*1000),
		fmt.Sprintf("the Docker VM has %d CPUs, which each of k3d's %d nodes reports as its own", ncpu, infra.K3dNodes),
		"give the Docker VM at least %d CPUs (Docker Desktop: Settings > Resources; colima start --cpu %[1]d)"))
	need := infra.Total(o.Config.Requests(infra.K3dNodes)).MemBytes
	if need > mem {
		r = append(r, Check{"memory", Fail, fmt.Sprintf("the lab requests %s and the Docker VM has %s, shared by all %d nodes", gib(need), gib(mem), infra.K3dNodes),
			fmt.Sprintf("give the Docker VM at least %s of memory (Docker Desktop: Settings > Resources; colima start --memory N)", gib(need+1<<30))})
	} else {
		r = append(r, Check{"memory", OK, fmt.Sprintf("the lab requests %s of the VM's %s", gib(need), gib(mem)), ""})
	}
	return r
}

// cpuCheck places the lab's pods on nodes offering alloc (millicores each) as the scheduler
// would; fix is a format with the CPUs per node that would do.
func cpuCheck(cfg infra.Config, nodes int, alloc []int64, where, fix string) Check {
	groups := cfg.Requests(nodes)
	tot := infra.Total(groups)
	pending := infra.Unschedulable(groups, alloc)
	if len(pending) == 0 {
		return Check{"cpu", OK, fmt.Sprintf("the lab requests %.1f CPUs; %s: everything fits", float64(tot.CPUMilli)/1000, where), ""}
	}
	perNode := int64(1)
	for ; perNode < 256 && len(infra.Unschedulable(groups, infra.Nodes(nodes, perNode*1000))) > 0; perNode++ {
	}
	fixText := fmt.Sprintf(fix, perNode)
	if small := cfg.WithProfile(infra.ProfileSmall); cfg.Profile != infra.ProfileSmall && len(infra.Unschedulable(small.Requests(nodes), alloc)) == 0 {
		fixText += fmt.Sprintf(", or run the small lab (%d gateway pods, one of each backend; the robust findings held at that size on the local target): pulumi config set igwlab:profile small -s lab (and pulumi config rm igwlab:gatewayReplicas -s lab if it is set: it overrides the profile)",
			small.GatewayReplicas)
	} else {
		for n := cfg.GatewayReplicas - 1; n >= 2; n-- {
			smaller := cfg
			smaller.GatewayReplicas = n
			if len(infra.Unschedulable(smaller.Requests(nodes), alloc)) == 0 {
				fixText += fmt.Sprintf(", or run fewer gateway pods: pulumi config set igwlab:gatewayReplicas %d -s lab", n)
				break
			}
		}
	}
	return Check{"cpu", Fail, fmt.Sprintf("the lab requests %.1f CPUs; %s, so %d pods would stay Pending (%s) until the install times out",
		float64(tot.CPUMilli)/1000, where, len(pending), summary(pending)), fixText}
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
