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
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// knobSets is --set knob=value, checked against Envoy's ranges as the catalog is.
type knobSets struct {
	k    stacks.Knobs
	seen map[string]bool
}

func (s *knobSets) String() string { return "" }
func (s *knobSets) Type() string   { return "knob=value" }
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

// flip previews or applies a scenario (and knob overrides). A preview gives the change to a
// temporary copy of the stack's config and never writes the stack's own; up writes it, as
// `pulumi config set` would, then applies it. Both hold the stack's lock.
func flipCmd(e *app.Env, verb, short string) *cobra.Command {
	var sf app.StackFlags
	var sets knobSets
	var scenario string
	c := app.Command(verb, short, func(cmd *cobra.Command) error {
		return flip(cmd.Context(), verb, e.Args, scenario, &sets, &sf, e.Stdout, e.Stderr)
	})
	fs := c.Flags()
	fs.StringVar(&scenario, "scenario", "", "scenario to "+verb+" (default: the stack's current one)")
	fs.Var(&sets, "set", "override a knob: path=value (repeatable), e.g. hcm.http2_protocol_options.max_concurrent_streams=100")
	sf.Register(fs)
	return c
}

func flip(ctx context.Context, verb string, args []string, scenario string, sets *knobSets, sf *app.StackFlags, stdout, stderr io.Writer) error {
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
	changes := map[string]string{configkey.Full(configkey.Knobs): sets.json()}
	if scenario != "" {
		changes[configkey.Full(configkey.Scenario)] = scenario
	}
	if verb == "preview" {
		p, err := st.Preview(ctx, changes, nil)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, p.Diff)
		return nil
	}
	for _, k := range []string{configkey.Full(configkey.Scenario), configkey.Full(configkey.Knobs)} {
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
