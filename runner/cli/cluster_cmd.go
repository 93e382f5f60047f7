package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/stack"
	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/stacks"
)

// stackFlags select the Pulumi stack of a cluster target.
type stackFlags struct {
	name       string
	inline     bool
	inlineDir  string
	kubeconfig string
	context    string
}

func (s *stackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.name, "stack", "lab", "Pulumi stack of the lab (its config is Pulumi.<stack>.yaml)")
	fs.BoolVar(&s.inline, "inline", false, "run the Pulumi program in this process instead of through Pulumi.yaml (no language host needed)")
	fs.StringVar(&s.inlineDir, "inline-dir", "", "with --inline: keep the stack's workspace and config here between runs")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig for --target existing (default: the stack's igwlab:kubeconfig, then $KUBECONFIG)")
	fs.StringVar(&s.context, "context", "", "kube context for --target existing (default: the stack's igwlab:kubeContext)")
}

// stackName is what Pulumi takes as a stack name: [org/[project/]]name.
var stackName = regexp.MustCompile(`^([A-Za-z0-9_.-]+/){0,2}[A-Za-z0-9_.-]{1,100}$`)

// check rejects stack flags that would otherwise reach Pulumi (and create a workspace folder)
// before failing, or be ignored in silence.
func (s *stackFlags) check() error {
	if !stackName.MatchString(s.name) {
		return usagef("--stack %q: allowed a Pulumi stack name: letters, digits, -, _ and ., at most 100 (optionally org/project/name)", s.name)
	}
	if s.inlineDir != "" && !s.inline {
		return usagef("--inline-dir %s: allowed only with --inline (without it the stack's config is Pulumi.%s.yaml)", s.inlineDir, s.name)
	}
	return nil
}

func (s *stackFlags) open(ctx context.Context) (stack.Stack, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	root, err := infra.RepoRoot()
	if err != nil && !s.inline {
		return nil, err
	}
	return stack.Open(ctx, stack.Options{Name: s.name, Inline: s.inline, WorkDir: root, InlineDir: s.inlineDir})
}

// clusterTarget opens the stack and a Kubernetes client for the k3d or existing target.
func clusterTarget(ctx context.Context, name string, sf *stackFlags, progress io.Writer) (target.Target, error) {
	st, err := sf.open(ctx)
	if err != nil {
		return nil, err
	}
	var kube *target.KubeClient
	switch name {
	case "k3d":
		outs, err := st.Outputs(ctx)
		if err != nil {
			return nil, err
		}
		kc, _ := outs["kubeconfig"].(string)
		if kc == "" {
			return nil, fmt.Errorf("stack %s has no kubeconfig output: bring the lab up first (pulumi up -s %s)", sf.name, sf.name)
		}
		rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
		if err != nil {
			return nil, fmt.Errorf("the stack's kubeconfig: %w", err)
		}
		if kube, err = target.NewKubeClientFromConfig(rc); err != nil {
			return nil, err
		}
	default:
		path, kctx := sf.kubeconfig, sf.context
		if path == "" {
			path, _, _ = st.GetConfig(ctx, "igwlab:kubeconfig")
		}
		if kctx == "" {
			kctx, _, _ = st.GetConfig(ctx, "igwlab:kubeContext")
		}
		if kube, err = target.NewKubeClient(path, kctx); err != nil {
			return nil, err
		}
	}
	ghz, _, _ := st.GetConfig(ctx, "igwlab:ghzImage")
	return target.NewCluster(target.ClusterOptions{Name: name, Kube: kube, Stack: st, Progress: progress, GHZImage: ghz}), nil
}

// knobSets is --set knob=value, checked against Envoy's ranges as the catalog is.
type knobSets struct {
	k    stacks.Knobs
	seen map[string]bool
}

func (s *knobSets) String() string { return "" }
func (s *knobSets) Set(v string) error {
	path, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("%q: want knob=value, e.g. hcm.http2_protocol_options.max_concurrent_streams=100", v)
	}
	path = strings.TrimSpace(path)
	spec, ok := stacks.Lookup(path)
	if !ok {
		msg := fmt.Sprintf("%q is not a knob", path)
		if sug := stacks.Suggest(path, stacks.KnobPaths()); sug != "" {
			msg += fmt.Sprintf("; did you mean %q?", sug)
		}
		return fmt.Errorf("%s (allowed: %s; igwlab knobs lists their ranges)", msg, strings.Join(stacks.KnobPaths(), ", "))
	}
	// Last-one-wins would hide a typo in a long command line: each knob once.
	if s.seen[path] {
		return fmt.Errorf("%s is set twice: allowed once per knob", path)
	}
	if err := spec.Set(&s.k, val); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[path] = true
	return nil
}

func (s *knobSets) json() string {
	if s.k.IsZero() {
		return ""
	}
	m := map[string]string{}
	for _, kv := range s.k.Set() {
		m[kv.Path] = kv.Value
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func runPreview(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return flip(ctx, "preview", args, stdout, stderr)
}

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return flip(ctx, "up", args, stdout, stderr)
}

// flip sets the scenario (and knob overrides) in the stack's config and previews or applies it.
// A preview puts the config back as it was, whatever happens.
func flip(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(verb, stderr)
	var sf stackFlags
	var sets knobSets
	scenario := fs.String("scenario", "", "scenario to "+verb+" (default: the stack's current one)")
	fs.Var(&sets, "set", "override a knob: path=value (repeatable), e.g. hcm.http2_protocol_options.max_concurrent_streams=100")
	sf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *scenario != "" {
		cat, err := stacks.Builtin()
		if err != nil {
			return err
		}
		if _, err := cat.MustGet(*scenario); err != nil {
			return UsageError{fmt.Errorf("--scenario: %w", err)}
		}
	}
	st, err := sf.open(ctx)
	if err != nil {
		return err
	}
	keep := map[string]string{}
	for _, k := range []string{"igwlab:scenario", "igwlab:knobs"} {
		if v, ok, _ := st.GetConfig(ctx, k); ok {
			keep[k] = v
		}
	}
	set := func(key, value string) error {
		if value == "" {
			return st.RemoveConfig(ctx, key)
		}
		return st.SetConfig(ctx, key, value, false)
	}
	if *scenario != "" {
		if err := set("igwlab:scenario", *scenario); err != nil {
			return err
		}
	}
	if err := set("igwlab:knobs", sets.json()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if verb == "up" {
		_, err := st.Up(ctx, stderr)
		return err
	}
	defer func() {
		bg := context.WithoutCancel(ctx)
		for _, k := range []string{"igwlab:scenario", "igwlab:knobs"} {
			if v, ok := keep[k]; ok {
				_ = st.SetConfig(bg, k, v, false)
			} else {
				_ = st.RemoveConfig(bg, k)
			}
		}
	}()
	p, err := st.Preview(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, p.Diff)
	return nil
}
