package app

import (
	"regexp"
	"strings"

	"github.com/spf13/pflag"
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
