package doctor

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/igwlab/igwlab/runner/pulumistack"
)

// pulumiChecks: the Pulumi CLI at the lab's minimum, logged in to a backend, the stack there,
// and the passphrase its secrets need. Each only reads: `pulumi whoami` and `pulumi stack ls`
// create nothing (opening the stack through the Automation API would create it).
func pulumiChecks(ctx context.Context, o Options) Report {
	stack := o.Stack.Name
	v := versionCheck(ctx, o.Tools, "pulumi", pulumistack.MinCLI, pulumiVersion,
		"install the Pulumi CLI "+pulumistack.MinCLI+" or later (https://www.pulumi.com/docs/install/): older ones only warn when the lab's checks fail")
	if v.Status != OK && !strings.Contains(v.Seen, "older than") {
		return Report{v}
	}
	r := Report{v}
	if o.StackOpen {
		return r
	}
	who, err := o.Tools.Output(ctx, "pulumi", "whoami", "--non-interactive", "--verbose")
	if err != nil {
		return append(r, Check{"login", Fail, "not logged in to a Pulumi backend (pulumi whoami: " + oneLine(err, who) + ")",
			"pulumi login --local (the state in ~/.pulumi on this machine), or pulumi login for Pulumi Cloud"})
	}
	r = append(r, Check{"login", OK, whoamiLine(who), ""})
	args := []string{"stack", "ls", "--json", "--non-interactive"}
	if o.ProjectDir != "" {
		args = append([]string{"--cwd", o.ProjectDir}, args...)
	}
	out, err := o.Tools.Output(ctx, "pulumi", args...)
	var stacks []struct {
		Name string `json:"name"`
	}
	switch {
	case err != nil || json.Unmarshal([]byte(out), &stacks) != nil:
		r = append(r, Check{"stack", Warn, "pulumi stack ls: " + oneLine(err, out), ""})
	case !hasStack(stacks, stack):
		r = append(r, Check{"stack", Warn, "no stack " + stack + " on this backend yet (the doctor makes none)", "pulumi stack init " + stack})
	default:
		r = append(r, Check{"stack", OK, stack + " exists", ""})
	}
	if o.Stack.File.Passphrase && os.Getenv("PULUMI_CONFIG_PASSPHRASE") == "" && os.Getenv("PULUMI_CONFIG_PASSPHRASE_FILE") == "" {
		if _, set := os.LookupEnv("PULUMI_CONFIG_PASSPHRASE"); !set {
			r = append(r, Check{"passphrase", Warn, "stack " + stack + " keeps its secrets with a passphrase, and PULUMI_CONFIG_PASSPHRASE is not set: pulumi up asks for it",
				"export PULUMI_CONFIG_PASSPHRASE= (the lab's stacks use an empty one unless you chose your own at pulumi stack init)"})
		}
	}
	return r
}

func hasStack(stacks []struct {
	Name string `json:"name"`
}, name string) bool {
	for _, s := range stacks {
		if s.Name == name || strings.HasSuffix(s.Name, "/"+name) {
			return true
		}
	}
	return false
}

// whoamiLine is `pulumi whoami --verbose` in a line: the user and the backend.
func whoamiLine(out string) string {
	var user, backend string
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		switch strings.TrimSpace(k) {
		case "User":
			user = strings.TrimSpace(v)
		case "Backend URL":
			backend = strings.TrimSpace(v)
		}
		if !ok && user == "" {
			user = strings.TrimSpace(l)
		}
	}
	if backend == "" {
		return "logged in as " + user
	}
	return "logged in as " + user + " to " + backend
}
