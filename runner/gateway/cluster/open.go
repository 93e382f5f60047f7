package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/internal/stackfile"
	"github.com/igwlab/igwlab/runner/doctor"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// The kinds of the real lab: a k3d cluster the stack creates, and a cluster of your own the
// stack installs into. Both switch scenarios through the Pulumi stack.
const (
	K3d      gateway.Kind = "k3d"
	Existing gateway.Kind = "existing"
)

func init() {
	for _, d := range []struct {
		kind  gateway.Kind
		help  string
		order int
	}{{K3d, "the Pulumi lab stack", 20}, {Existing, "the stack on your cluster", 30}} {
		gateway.Register(gateway.Driver{Kind: d.kind, Help: d.help, Order: d.order,
			Open:    func(ctx context.Context, o gateway.Options) (gateway.Target, error) { return Open(ctx, d.kind, o) },
			Resolve: Resolve, Timing: Timing})
	}
}

// Resolve runs a scenario with the lab's values: a real gateway takes no local departure.
func Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure) { return lab.Lab(), nil }

// Resolve implements gateway.Target.
func (c *Cluster) Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure) {
	return Resolve(lab)
}

// Open takes the stack's lock, opens the stack and a Kubernetes client for the cluster of the
// kind. The target holds the lock until it is closed.
func Open(ctx context.Context, kind gateway.Kind, o gateway.Options) (gateway.Target, error) {
	st, release, err := pulumistack.OpenFor(ctx, pulumistack.Options{Name: o.Stack.Name, Inline: o.Stack.Inline, InlineDir: o.Stack.InlineDir},
		"suite --target "+string(kind))
	if err != nil {
		return nil, err
	}
	t, err := openOn(ctx, kind, o, st, release)
	if err != nil {
		release()
	}
	return t, err
}

func openOn(ctx context.Context, kind gateway.Kind, o gateway.Options, st pulumistack.Stack, release func()) (gateway.Target, error) {
	sc, err := oneCluster(ctx, kind, o, st)
	if err != nil {
		return nil, err
	}
	if err := doctor.Preflight(ctx, st); err != nil {
		return nil, err
	}
	var kc *kube.Client
	switch kind {
	case K3d:
		outs, err := st.Outputs(ctx)
		if err != nil {
			return nil, err
		}
		raw, _ := outs["kubeconfig"].(string)
		if raw == "" {
			return nil, fmt.Errorf("stack %s has no kubeconfig output: bring the lab up first (pulumi up -s %s)", o.Stack.Name, o.Stack.Name)
		}
		rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("the stack's kubeconfig: %w", err)
		}
		if kc, err = kube.NewClientFromConfig(rc); err != nil {
			return nil, err
		}
	default:
		// The stack's kubeconfig and context, which oneCluster made the flags' (or refused).
		if kc, err = kube.NewClient(sc.kubeconfig, sc.context); err != nil {
			return nil, err
		}
	}
	if err := sameCluster(ctx, st, kc, sc); err != nil {
		kc.Close()
		return nil, err
	}
	drain, err := DrainTimeout(ctx, st)
	if err != nil {
		kc.Close()
		return nil, err
	}
	kc.Timeout = gateway.AdminTimeout
	var deps []stacks.Departure
	if kind == K3d {
		cfg, _, _ := doctor.FromStack(ctx, st)
		if d := doctor.HostShared(ctx, doctor.Exec{}, cfg); d != nil {
			deps = append(deps, *d)
		}
	}
	return NewCluster(ClusterOptions{Name: string(kind), Kube: kc, Stack: st, Progress: o.Progress,
		DrainTimeout: drain, OnClose: release, Departures: deps}), nil
}

// Timing reads the drain time and workers per pod from the stack's config (without Pulumi: a
// plain read of Pulumi.yaml's defaults under Pulumi.<stack>.yaml), falling back to the
// program's defaults.
func Timing(o gateway.Options) (gateway.Timing, error) {
	stackName := o.Stack.Name
	drain, workers := infra.Defaults.GatewayDrainDuration, infra.Defaults.ProxyConcurrency
	root, err := infra.RepoRoot()
	if err != nil {
		return gateway.Timing{}, err
	}
	f, err := stackfile.Read(root, stackName)
	if err != nil {
		return gateway.Timing{}, fmt.Errorf("--stack %s: %w", stackName, err)
	}
	from := "default"
	if raw, ok := f.Values[configkey.Full(configkey.GatewayDrainDuration)]; ok {
		if drain, err = infra.ParseDrainDuration(raw); err != nil {
			return gateway.Timing{}, fmt.Errorf("%s: %w", f.From[configkey.Full(configkey.GatewayDrainDuration)], err)
		}
		from = f.From[configkey.Full(configkey.GatewayDrainDuration)]
	}
	if raw, ok := f.Values[configkey.Full(configkey.ProxyConcurrency)]; ok {
		if workers, err = strconv.Atoi(strings.TrimSpace(raw)); err != nil || workers < 1 {
			return gateway.Timing{}, fmt.Errorf("%s: %s %v: allowed a whole number >= 1", f.From[configkey.Full(configkey.ProxyConcurrency)], configkey.Full(configkey.ProxyConcurrency), raw)
		}
	}
	return gateway.Timing{Drain: drain, Workers: workers,
		Source: fmt.Sprintf("drain %s (%s), %d worker(s) per gateway pod", drain, from, workers)}, nil
}
