package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

// openStack opens a stack (a seam for tests).
var openStack = stack.Open

// openUnlocked opens the stack for reading only (its outputs, its config).
func (s *stackFlags) openUnlocked(ctx context.Context) (stack.Stack, error) {
	st, _, err := s.openAs(ctx, "")
	return st, err
}

// openAs opens the stack; with a purpose it first takes the stack's lock for this process
// (up, preview, suite), failing at once if another igwlab holds it. release frees it.
func (s *stackFlags) openAs(ctx context.Context, purpose string) (st stack.Stack, release func(), err error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	root, err := infra.RepoRoot()
	if err != nil && !s.inline {
		return nil, nil, err
	}
	release = func() {}
	if purpose != "" {
		dir := root
		if s.inlineDir != "" {
			dir = s.inlineDir
		}
		if release, err = stack.Lock(dir, s.name, purpose); err != nil {
			return nil, nil, err
		}
	}
	st, err = openStack(ctx, stack.Options{Name: s.name, Inline: s.inline, WorkDir: root, InlineDir: s.inlineDir})
	if err != nil {
		release()
		return nil, nil, err
	}
	return st, release, nil
}

// clusterTarget opens the stack and a Kubernetes client for the k3d or existing target. The
// target holds the stack's lock until it is closed.
func clusterTarget(ctx context.Context, name string, sf *stackFlags, progress io.Writer) (target.Target, error) {
	st, release, err := sf.openAs(ctx, "suite --target "+name)
	if err != nil {
		return nil, err
	}
	t, err := openClusterTarget(ctx, name, sf, st, progress, release)
	if err != nil {
		release()
	}
	return t, err
}

func openClusterTarget(ctx context.Context, name string, sf *stackFlags, st stack.Stack, progress io.Writer, release func()) (target.Target, error) {
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
		var err error
		if kube, err = target.NewKubeClient(path, kctx); err != nil {
			return nil, err
		}
	}
	drain, err := target.DrainTimeout(ctx, st)
	if err != nil {
		kube.Close()
		return nil, err
	}
	ghz, _, _ := st.GetConfig(ctx, "igwlab:ghzImage")
	return target.NewCluster(target.ClusterOptions{Name: name, Kube: kube, Stack: st, Progress: progress, GHZImage: ghz,
		DrainTimeout: drain, OnClose: release}), nil
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
	b, _ := json.Marshal(s.k) // a flat object of strings cannot fail to encode
	return string(b)
}

func runPreview(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return flip(ctx, "preview", args, stdout, stderr)
}

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return flip(ctx, "up", args, stdout, stderr)
}

// flip previews or applies a scenario (and knob overrides). A preview gives the change to a
// temporary copy of the stack's config and never writes the stack's own; up writes it, as
// `pulumi config set` would, then applies it. Both hold the stack's lock.
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
	st, release, err := sf.openAs(ctx, strings.TrimSpace(verb+" "+strings.Join(args, " ")))
	if err != nil {
		return err
	}
	defer release()
	changes := map[string]string{"igwlab:knobs": sets.json()}
	if *scenario != "" {
		changes["igwlab:scenario"] = *scenario
	}
	if verb == "preview" {
		p, err := st.Preview(ctx, changes, nil)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, p.Diff)
		return nil
	}
	for _, k := range []string{"igwlab:scenario", "igwlab:knobs"} {
		v, ok := changes[k]
		switch {
		case !ok:
		case v == "":
			if _, set, _ := st.GetConfig(ctx, k); set {
				err = st.RemoveConfig(ctx, k)
			}
		default:
			err = st.SetConfig(ctx, k, v, false)
		}
		if err != nil {
			return err
		}
	}
	_, err = st.Up(ctx, stderr)
	return err
}
