package app

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/stacks"
)

// StackFlags select the Pulumi stack of the real lab: its targets and commands take them.
type StackFlags struct {
	Name       string
	Inline     bool
	InlineDir  string
	Kubeconfig string
	Context    string
}

// Register adds the flags to fs.
func (s *StackFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&s.Name, "stack", "lab", "Pulumi stack of the lab (its config is Pulumi.<stack>.yaml)")
	fs.BoolVar(&s.Inline, "inline", false, "run the Pulumi program in this process instead of through Pulumi.yaml (no language host needed)")
	fs.StringVar(&s.InlineDir, "inline-dir", "", "with --inline: keep the stack's workspace and config here between runs")
	fs.StringVar(&s.Kubeconfig, "kubeconfig", "", "kubeconfig of a cluster the stack does not create (default: the stack's igwlab:kubeconfig, then $KUBECONFIG)")
	fs.StringVar(&s.Context, "context", "", "kube context of a cluster the stack does not create (default: the stack's igwlab:kubeContext)")
}

// stackName is what Pulumi takes as a stack name: [org/[project/]]name.
var stackName = regexp.MustCompile(`^([A-Za-z0-9_.-]+/){0,2}[A-Za-z0-9_.-]{1,100}$`)

// Check rejects stack flags that would otherwise reach Pulumi (and create a workspace folder)
// before failing, or be ignored in silence.
func (s *StackFlags) Check() error {
	if !stackName.MatchString(s.Name) {
		return Usagef("--stack %q: allowed a Pulumi stack name: letters, digits, -, _ and ., at most 100 (optionally org/project/name)", s.Name)
	}
	if s.InlineDir != "" && !s.Inline {
		return Usagef("--inline-dir %s: allowed only with --inline (without it the stack's config is Pulumi.%s.yaml)", s.InlineDir, s.Name)
	}
	return nil
}

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Type() string   { return "list" }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// KnobSets is a repeatable knob=value flag (--set, --knob), each value checked against Envoy's
// range as the catalog checks it.
type KnobSets struct {
	K    stacks.Knobs
	seen map[string]bool
}

func (s *KnobSets) String() string { return "" }
func (s *KnobSets) Type() string   { return "knob=value" }
func (s *KnobSets) Set(v string) error {
	var one stacks.Knobs
	spec, err := stacks.ParseKnobSetting(&one, v)
	if err != nil {
		return err
	}
	// Last-one-wins would hide a typo in a long command line: each knob once.
	if s.seen[spec.Path] {
		return fmt.Errorf("%s is set twice: allowed once per knob", spec.Path)
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[spec.Path] = true
	s.K = s.K.Overlay(one)
	return nil
}

// JSON is the knobs as the stack's igwlab:knobs takes them, "" when none is set.
func (s *KnobSets) JSON() string {
	if s.K.IsZero() {
		return ""
	}
	b, _ := json.Marshal(s.K) // a flat object of strings cannot fail to encode
	return string(b)
}
