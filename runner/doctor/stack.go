package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/internal/stackfile"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// FromStack is the stack's config as the program reads it (infra.ParseConfig), through the
// stack's own config: every key, the sizes, the cluster and the images. configErr is what the
// program would refuse (the key, the value, what is allowed), next to the values that could be
// read; err is a failure to read the stack at all. The config is read once (one Pulumi CLI
// call, not one a key: fifty of those took 12 s of every igwlab up).
func FromStack(ctx context.Context, st pulumistack.Stack) (cfg infra.Config, configErr, err error) {
	all, err := st.AllConfig(ctx) // on an error, all is nil and cfg the program's defaults
	cfg, configErr = infra.ParseConfig(func(key string) string { return all[configkey.Full(key)] })
	return cfg, configErr, err
}

// Stack is what the doctor knows of the stack it checks, read from its files alone.
type Stack struct {
	Name string
	File stackfile.Config
	// Config is the program's reading of it, and ConfigErr what the program would refuse.
	Config    infra.Config
	ConfigErr error
	// Flags says how command-line flags changed what is checked ("" when none did).
	Flags string
}

// ReadStack reads a stack's config from the project's files (Pulumi.yaml's defaults under
// Pulumi.<stack>.yaml) without Pulumi: no CLI, login or backend, nothing created.
func ReadStack(projectDir, name string) (Stack, error) {
	f, err := stackfile.Read(projectDir, name)
	if err != nil {
		return Stack{}, err
	}
	cfg, cerr := infra.ParseConfig(func(key string) string { v, _ := f.Get(configkey.Full(key)); return v })
	return Stack{Name: name, File: f, Config: cfg, ConfigErr: cerr}, nil
}

// configCheck reports where the stack's config comes from, and the program's refusal if any.
func configCheck(s Stack) Check {
	from := "Pulumi.yaml's defaults only (no " + baseName(s.File.StackFile) + " yet: pulumi stack init " + s.Name + " makes the stack)"
	if s.File.StackFileExists {
		from = baseName(s.File.StackFile) + " over Pulumi.yaml's defaults"
	}
	if s.Flags != "" {
		from += ", " + s.Flags
	}
	if s.ConfigErr != nil {
		return Check{"config", Fail, fmt.Sprintf("stack %s (%s): %s", s.Name, from, oneLine(s.ConfigErr, "")), "fix the key it names: pulumi config set igwlab:<key> <value> -s " + s.Name}
	}
	return Check{"config", OK, fmt.Sprintf("stack %s: %s; %s", s.Name, from, describe(s.Config)), ""}
}

// describe is the lab the config asks for, in a line.
func describe(c infra.Config) string {
	where := "a k3d cluster " + c.ClusterName
	if c.Cluster == infra.ClusterExisting {
		where = "an existing cluster (context " + orDefault(c.KubeContext, "the kubeconfig's current") + ")"
	}
	limit, _ := c.GatewayCPU()
	return fmt.Sprintf("%s, Istio %s, %d gateway pods of %d worker(s) and %s CPU", where, c.IstioVersion, c.GatewayReplicas, c.ProxyConcurrency, limit)
}

func baseName(path string) string { return path[strings.LastIndexAny(path, `/\`)+1:] }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ForStack runs every check for an open stack's lab on this machine (and, for a cluster of the
// user's, on that cluster, reached as the stack reaches it).
func ForStack(ctx context.Context, st pulumistack.Stack) (Report, error) {
	cfg, cerr, err := FromStack(ctx, st)
	if err != nil {
		return nil, err
	}
	s := Stack{Name: st.Name(), Config: cfg, ConfigErr: cerr, File: stackfile.Config{StackFileExists: true, StackFile: "Pulumi." + st.Name() + ".yaml"}}
	return Run(ctx, Options{Stack: s, Tools: Exec{}, PortBusy: PortBusy, Cluster: Connect, StackOpen: true}), nil
}

// Preflight is what `up` and `suite` on a cluster target run before they apply anything: every
// check, and an error listing the failures with their fixes.
func Preflight(ctx context.Context, st pulumistack.Stack) error {
	r, err := ForStack(ctx, st)
	if err != nil {
		return err
	}
	return r.Err()
}

// Connect reaches a cluster of the user's with its kubeconfig and context, and reads what the
// doctor checks there.
func Connect(ctx context.Context, kubeconfig, kubeContext string) (ClusterFacts, error) {
	kc, err := kube.NewClient(kubeconfig, kubeContext)
	if err != nil {
		return ClusterFacts{}, err
	}
	defer kc.Close()
	return Inspect(ctx, kc)
}

// OnCluster is the stack as it would be on a cluster of the user's reached with kubeconfig and
// kubeContext (the doctor's --kubeconfig/--context): igwlab:cluster existing with those, read
// and checked as the program would.
func (s Stack) OnCluster(kubeconfig, kubeContext string) Stack {
	get := func(key string) string {
		switch key {
		case configkey.Cluster:
			return infra.ClusterExisting
		case configkey.Kubeconfig:
			return kubeconfig
		case configkey.KubeContext:
			return kubeContext
		}
		v, _ := s.File.Get(configkey.Full(key))
		return v
	}
	s.Config, s.ConfigErr = infra.ParseConfig(get)
	s.Flags = "checked as igwlab:cluster existing on --kubeconfig/--context"
	return s
}
