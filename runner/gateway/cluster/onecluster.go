package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/doctor"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// stackCluster is the cluster a stack applies to, from its config: the kind (igwlab:cluster,
// k3d unless set) and, for an existing cluster, the kubeconfig and context its Kubernetes
// provider uses.
type stackCluster struct {
	kind                string
	kubeconfig, context string
}

func (s stackCluster) String() string {
	if s.kind != infra.ClusterExisting {
		return "its own k3d cluster (igwlab:cluster " + s.kind + ")"
	}
	out := "context " + orDefault(s.context, "(kubeconfig's current)")
	return out + " of kubeconfig " + orDefault(s.kubeconfig, "(the default: $KUBECONFIG or ~/.kube/config)")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func readStackCluster(ctx context.Context, st pulumistack.Stack) (stackCluster, error) {
	// A value the program would refuse is the preflight's to report, with every other one.
	cfg, _, err := doctor.FromStack(ctx, st)
	return stackCluster{kind: cfg.Cluster, kubeconfig: cfg.Kubeconfig, context: cfg.KubeContext}, err
}

// oneCluster makes the cluster the runner measures the one the stack applies to, before
// anything is applied: the target's kind must be the stack's, and --kubeconfig/--context
// either name what the stack already names or, where the stack names nothing, are written to
// its config so that its `pulumi up` goes there too. Anything else is refused with both
// clusters named: a switch would otherwise land on one cluster while another is measured.
func oneCluster(ctx context.Context, kind gateway.Kind, o gateway.Options, st pulumistack.Stack) (stackCluster, error) {
	sc, err := readStackCluster(ctx, st)
	if err != nil {
		return sc, err
	}
	name := o.Stack.Name
	switch {
	case kind == K3d && sc.kind != infra.ClusterK3d:
		return sc, fmt.Errorf("--target k3d: stack %s applies to %s, not a k3d cluster; run --target existing, or set igwlab:cluster k3d", name, sc)
	case kind == Existing && sc.kind != infra.ClusterExisting:
		return sc, fmt.Errorf("--target existing: stack %s applies to %s, so every scenario switch would land there; "+
			"give your cluster a stack of its own (pulumi stack init gke, then pulumi config set igwlab:cluster existing -s gke, igwlab:kubeconfig and igwlab:kubeContext) "+
			"and run with --stack gke, or run --target k3d. One stack holds one cluster: pointing %s elsewhere would delete its k3d cluster",
			name, sc, name)
	}
	return sc, useClusterFlags(&sc, o.Stack, o.Progress, func(k, v string) error { return st.SetConfig(ctx, k, v, false) })
}

// useClusterFlags checks --kubeconfig and --context against the stack sc describes (read from
// st): they must name what the stack already names, or, where it names nothing, they are
// written (set) to its config so that its `pulumi up` goes there too; a k3d stack takes neither.
// preview and up run it too, so no command measures, previews or applies to another cluster
// than the stack's.
func useClusterFlags(sc *stackCluster, so gateway.StackOptions, progress io.Writer, set func(key, value string) error) error {
	name := so.Name
	if sc.kind != infra.ClusterExisting {
		if so.Kubeconfig != "" || so.Context != "" {
			return fmt.Errorf("--kubeconfig/--context: stack %s applies to %s, reached through its kubeconfig output; drop them, or give your cluster a stack of its own (pulumi stack init gke; igwlab:cluster existing there) and run with --stack gke", name, sc)
		}
		return nil
	}
	for _, f := range []struct {
		flag, key, given string
		stack            *string
	}{{"--kubeconfig", configkey.Kubeconfig, so.Kubeconfig, &sc.kubeconfig}, {"--context", configkey.KubeContext, so.Context, &sc.context}} {
		switch {
		case f.given == "" || f.given == *f.stack || f.key == configkey.Kubeconfig && samePath(f.given, *f.stack):
		case *f.stack != "":
			return fmt.Errorf("%s %s: stack %s applies to %s (igwlab:%s %s); %s %s would measure or preview one cluster and switch another. "+
				"Drop %s, or point the stack there first (pulumi config set igwlab:%s %s -s %s)",
				f.flag, f.given, name, sc, f.key, *f.stack, f.flag, f.given, f.flag, f.key, f.given, name)
		default:
			if err := set(configkey.Full(f.key), f.given); err != nil {
				return err
			}
			*f.stack = f.given
			if progress != nil {
				fmt.Fprintf(progress, "stack %s now applies to %s: igwlab:%s set to %s from %s\n", name, sc, f.key, f.given, f.flag)
			}
		}
	}
	return nil
}

// StackClusterFlags reads the cluster st applies to and checks --kubeconfig and --context against
// it (useClusterFlags): preview and up run it before they touch the stack.
// set writes what the flags add (a preview puts it in its temporary copy of the config).
func StackClusterFlags(ctx context.Context, st pulumistack.Stack, so gateway.StackOptions, progress io.Writer, set func(key, value string) error) error {
	sc, err := readStackCluster(ctx, st)
	if err != nil {
		return err
	}
	return useClusterFlags(&sc, so, progress, set)
}

// samePath reports that two kubeconfig paths name one file (~ expanded, made absolute).
func samePath(a, b string) bool {
	abs := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				p = filepath.Join(home, rest)
			}
		}
		if q, err := filepath.Abs(p); err == nil {
			return q
		}
		return p
	}
	return a != "" && b != "" && abs(a) == abs(b)
}

// identity is what names the cluster a client reaches (kube.Client.Identity).
type identity interface {
	Identity(ctx context.Context) (server, uid string, err error)
}

// sameCluster checks, before anything is applied, that the cluster the runner's client reaches
// is the one the stack's last update ran against: the kube-system namespace's UID the program
// exports (infra.ClusterUIDOutput). A stack that has not been up yet has none to compare.
func sameCluster(ctx context.Context, st pulumistack.Stack, kc identity, sc stackCluster) error {
	outs, err := st.Outputs(ctx)
	if err != nil {
		return err
	}
	want, _ := outs[infra.ClusterUIDOutput].(string)
	if want == "" {
		return nil
	}
	server, uid, err := kc.Identity(ctx)
	if err != nil {
		return fmt.Errorf("reading the cluster's identity (namespace kube-system) at %s: %w", server, err)
	}
	if uid != want {
		return fmt.Errorf("the runner reaches the cluster at %s (kube-system %s), but stack %s last applied to another (kube-system %s) through %s: "+
			"refusing to measure one cluster and switch another; point igwlab:kubeconfig/igwlab:kubeContext (or --kubeconfig/--context) at one cluster",
			server, uid, st.Name(), want, sc)
	}
	return nil
}
