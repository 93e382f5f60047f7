package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/stacks"
)

// dockerChecks: Docker reachable, its VM's CPUs and memory against what the lab requests on
// k3d's nodes (each of which reports the whole VM as its own, so the scheduler's view and the
// VM's real cores are two checks), and BuildKit where the program builds the lab's image. The
// same numbers as `pulumi up`'s own preflight (infra/k3d-cluster.sh), from the same
// computation (infra.Config.K3dNeeds).
func dockerChecks(ctx context.Context, o Options) Report {
	const fixDocker = "install Docker (Docker Engine, Docker Desktop, colima) and start it"
	cfg := o.Stack.Config
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
	cpu := cpuCheck(cfg, o.Stack.Name, infra.K3dNodes, infra.Nodes(infra.K3dNodes, int64(ncpu)*1000),
		fmt.Sprintf("the Docker VM has %d CPUs, which each of k3d's %d nodes reports as its own", ncpu, infra.K3dNodes),
		"give the Docker VM at least %d CPUs (Docker Desktop: Settings > Resources; colima start --cpu %[1]d)")
	r = append(r, cpu)
	_, total := cfg.K3dNeeds()
	if cpu.Status == OK && total.CPUMilli > int64(ncpu)*1000 {
		r = append(r, Check{"cores", Warn, fmt.Sprintf("the lab requests %.1f CPUs and the Docker VM has %d real cores: every pod is scheduled (each node reports all %[2]d), but the pods share those cores, so scenarios that load every gateway pod at once are bound by the machine, not the gateway (their results say so)",
			float64(total.CPUMilli)/1000, ncpu),
			fmt.Sprintf("give the Docker VM %d CPUs to run the lab without sharing, or run fewer gateway pods (pulumi config set igwlab:profile small -s %s)", (total.CPUMilli+999)/1000, o.Stack.Name)})
	}
	if need := total.MemBytes; need > mem {
		r = append(r, Check{"memory", Fail, fmt.Sprintf("the lab requests %s and the Docker VM has %s, shared by all %d nodes", gib(need), gib(mem), infra.K3dNodes),
			fmt.Sprintf("give the Docker VM at least %s of memory (Docker Desktop: Settings > Resources; colima start --memory N)", gib(need+1<<30))})
	} else {
		r = append(r, Check{"memory", OK, fmt.Sprintf("the lab requests %s of the VM's %s", gib(need), gib(mem)), ""})
	}
	if cfg.BuildsImage() {
		r = append(r, buildKitCheck(ctx, o, f[2]))
	}
	return r
}

// buildKitCheck: the lab's Dockerfile needs BuildKit (cache mounts, FROM --platform). Docker 23
// and later build with it through the buildx plugin and, without the plugin, fall back to the
// legacy builder, or with DOCKER_BUILDKIT=1 (which the program's build sets) stop; Docker 20.10
// has BuildKit in the daemon, which DOCKER_BUILDKIT=1 turns on.
func buildKitCheck(ctx context.Context, o Options, server string) Check {
	if v, err := o.Tools.Output(ctx, "docker", "buildx", "version"); err == nil {
		// "github.com/docker/buildx v0.22.0 1a3e7d2"
		if f := strings.Fields(v); len(f) >= 2 {
			v = f[1]
		}
		return Check{"buildkit", OK, strings.TrimSpace("docker buildx " + v), ""}
	}
	if !atLeast(server, "23.0.0") {
		return Check{"buildkit", OK, "Docker " + server + " has BuildKit in its daemon (the lab's build sets DOCKER_BUILDKIT=1)", ""}
	}
	return Check{"buildkit", Fail, "Docker " + server + " builds with BuildKit through the buildx plugin, and docker buildx version fails",
		"install the plugin (Docker's docker-buildx-plugin package, Debian's docker-buildx), or build the image elsewhere and set igwlab:h2dialImage"}
}

// labClusterCheck: the k3d cluster of the lab's name, as docker sees it: none yet, this
// stack's (running, or stopped: a refused connection on its API port until k3d starts it), or
// one this stack did not make (never adopted).
func labClusterCheck(ctx context.Context, o Options) Check {
	cfg, stack := o.Stack.Config, o.Stack.Name
	name := "k3d cluster"
	out, err := o.Tools.Output(ctx, "docker", "ps", "-a", "--filter", "label=k3d.cluster="+cfg.ClusterName, "--filter", "label=k3d.role=server",
		"--format", `{{.Label "igwlab.owner"}}|{{.State}}`)
	if err != nil {
		return Check{name, Warn, "docker ps: " + oneLine(err, out), ""}
	}
	line := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if line == "" {
		return Check{name, OK, cfg.ClusterName + " does not exist yet: pulumi up -s " + stack + " creates it", ""}
	}
	owner, state, _ := strings.Cut(line, "|")
	if owner != "igwlab/"+stack {
		by := "was not created by stack " + stack
		if owner != "" {
			by = "belongs to another stack (" + owner + ")"
		}
		return Check{name, Fail, cfg.ClusterName + " exists and " + by + ": it is never adopted",
			"delete it (k3d cluster delete " + cfg.ClusterName + ") or give the lab another name (pulumi config set igwlab:clusterName <name> -s " + stack + ")"}
	}
	if state != "running" {
		return Check{name, Warn, cfg.ClusterName + " is this stack's and is stopped (" + state + "): its API refuses connections until it starts",
			"pulumi up -s " + stack + " starts it, or k3d cluster start " + cfg.ClusterName}
	}
	return Check{name, OK, cfg.ClusterName + " is this stack's and running", ""}
}

// cpuCheck places the lab's pods on nodes offering alloc (millicores each) as the scheduler
// would; fix is a format with the CPUs per node that would do.
func cpuCheck(cfg infra.Config, stack string, nodes int, alloc []int64, where, fix string) Check {
	groups := cfg.Requests(nodes)
	tot := infra.Total(groups)
	pending := infra.Unschedulable(groups, alloc)
	if len(pending) == 0 {
		return Check{"cpu", OK, fmt.Sprintf("the lab requests %.1f CPUs; %s: every pod is scheduled", float64(tot.CPUMilli)/1000, where), ""}
	}
	fixText := fmt.Sprintf(fix, infra.NodeCPUsNeeded(groups, nodes))
	if small := cfg.WithProfile(infra.ProfileSmall); cfg.Profile != infra.ProfileSmall && len(infra.Unschedulable(small.Requests(nodes), alloc)) == 0 {
		fixText += fmt.Sprintf(", or run the small lab (%d gateway pods, one of each backend; the robust findings held at that size on the local target): pulumi config set igwlab:profile small -s %[2]s (and pulumi config rm igwlab:gatewayReplicas -s %[2]s if it is set: it overrides the profile)",
			small.GatewayReplicas, stack)
	} else {
		for n := cfg.GatewayReplicas - 1; n >= 2; n-- {
			smaller := cfg
			smaller.GatewayReplicas = n
			if len(infra.Unschedulable(smaller.Requests(nodes), alloc)) == 0 {
				fixText += fmt.Sprintf(", or run fewer gateway pods: pulumi config set igwlab:gatewayReplicas %d -s %s", n, stack)
				break
			}
		}
	}
	return Check{"cpu", Fail, fmt.Sprintf("the lab requests %.1f CPUs; %s, so %d pods would stay Pending (%s) until the install times out",
		float64(tot.CPUMilli)/1000, where, len(pending), summary(pending)), fixText}
}

// HostShared is the departure a k3d lab's results carry when its pods request more CPUs than the
// Docker VM has real cores (nil when they fit, or Docker cannot be read): the scheduler places
// them (each node reports the whole VM), but scenarios that load every gateway pod at once are
// then bound by the machine, not the gateway.
func HostShared(ctx context.Context, t Tools, cfg infra.Config) *stacks.Departure {
	out, err := t.Output(ctx, "docker", "info", "--format", "{{.NCPU}}")
	ncpu, cerr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || cerr != nil || ncpu <= 0 {
		return nil
	}
	_, total := cfg.K3dNeeds()
	if total.CPUMilli <= int64(ncpu)*1000 {
		return nil
	}
	return &stacks.Departure{Field: "CPU cores under the lab's pods",
		Lab:   fmt.Sprintf("%.1f, what they request", float64(total.CPUMilli)/1000),
		Local: fmt.Sprintf("%d, the Docker VM's, shared by all of them: scenarios that load every gateway pod at once are bound by the machine, not the gateway", ncpu)}
}
