package app

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/stacks"
)

// completeScenarios completes a flag with the built-in catalog's scenario names.
func completeScenarios(c *cobra.Command, flag string) {
	_ = c.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		cat, err := stacks.Builtin()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, sc := range cat.All() {
			out = append(out, sc.Name+"\t"+sc.Title)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// completeKnobs completes a flag with the registry's knob paths, followed by "=" when the flag
// takes knob=value.
func completeKnobs(c *cobra.Command, flag string, withValue bool) {
	_ = c.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, s := range stacks.Registry {
			p := s.Path
			if withValue {
				p += "="
			}
			out = append(out, p+"\t"+s.Range()+" "+s.Unit+", default "+strings.TrimSpace(s.Default))
		}
		d := cobra.ShellCompDirectiveNoFileComp
		if withValue {
			d |= cobra.ShellCompDirectiveNoSpace
		}
		return out, d
	})
}
