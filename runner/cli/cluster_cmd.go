package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/cli/app"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// flip previews or applies a scenario (and knob overrides). A preview gives the change to a
// temporary copy of the stack's config and never writes the stack's own; up writes it, as
// `pulumi config set` would, then applies it. Both hold the stack's lock.
func flipCmd(e *app.Env, verb, short string) *cobra.Command {
	var sf app.StackFlags
	var sets app.KnobSets
	var efs app.EnvoyFilters
	var scenario string
	c := app.Command(verb, short, func(cmd *cobra.Command) error {
		k, err := efs.With(sets.K)
		if err != nil {
			return err
		}
		if len(efs.Files) > 0 {
			fmt.Fprint(e.Stderr, efs.Text())
		}
		return flip(cmd.Context(), verb, e.Args, scenario, k, &sf, e.Stdout, e.Stderr)
	})
	fs := c.Flags()
	fs.StringVar(&scenario, "scenario", "", "scenario to "+verb+" (default: the stack's current one)")
	fs.Var(&sets, "set", "override a knob: path=value (repeatable), e.g. hcm.http2_protocol_options.max_concurrent_streams=100")
	fs.Var(&efs, "envoyfilter", "an EnvoyFilter of yours (repeatable): the knobs its patches set, as --set would; what the lab does not model is named")
	sf.Register(fs)
	return c
}

func flip(ctx context.Context, verb string, args []string, scenario string, knobs stacks.Knobs, sf *app.StackFlags, stdout, stderr io.Writer) error {
	if scenario != "" {
		cat, err := stacks.Builtin()
		if err != nil {
			return err
		}
		if _, err := cat.MustGet(scenario); err != nil {
			return app.UsageError{Err: fmt.Errorf("--scenario: %w", err)}
		}
	}
	if err := sf.Check(); err != nil {
		return err
	}
	st, release, err := pulumistack.OpenFor(ctx, stackOptions(sf), strings.Join(args, " "))
	if err != nil {
		return err
	}
	defer release()
	changes := map[string]string{configkey.Full(configkey.Knobs): knobsJSON(knobs)}
	if scenario != "" {
		changes[configkey.Full(configkey.Scenario)] = scenario
	}
	// --kubeconfig/--context name the stack's own cluster or none yet: a preview shows, and an
	// up applies to, the cluster they name and no other.
	if err := cluster.StackClusterFlags(ctx, st, gateway.StackOptions{Name: sf.Name, Kubeconfig: sf.Kubeconfig, Context: sf.Context}, stderr,
		func(k, v string) error { changes[k] = v; return nil }); err != nil {
		return err
	}
	if verb == "preview" {
		p, err := st.Preview(ctx, changes, nil)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, p.Diff)
		return nil
	}
	if err := preflight(ctx, st); err != nil {
		return err
	}
	for _, k := range []string{configkey.Full(configkey.Scenario), configkey.Full(configkey.Knobs), configkey.Full(configkey.Kubeconfig), configkey.Full(configkey.KubeContext)} {
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

// stackOptions opens the stack the flags select.
func stackOptions(sf *app.StackFlags) pulumistack.Options {
	return pulumistack.Options{Name: sf.Name, Inline: sf.Inline, InlineDir: sf.InlineDir}
}

// knobsJSON is the knobs as the stack's igwlab:knobs takes them, "" when none is set.
func knobsJSON(k stacks.Knobs) string {
	if k.IsZero() {
		return ""
	}
	b, _ := json.Marshal(k) // a flat object of strings cannot fail to encode
	return string(b)
}
