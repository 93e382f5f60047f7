package app

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/report"
)

func (e *Env) reportCmd() *cobra.Command {
	return &cobra.Command{Use: "report RESULTS_DIR", Short: "draw a results folder's plots and write its report.html again",
		Long:          "igwlab report RESULTS_DIR rewrites RESULTS_DIR/plots and RESULTS_DIR/report.html",
		SilenceErrors: true, SilenceUsage: true,
		Args: argsExactly(1, "report: want one results folder (e.g. results/20261130T120000Z)"),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := args[0]
			run, err := report.Load(dir)
			if err != nil {
				return err
			}
			plots, err := report.Write(dir, run)
			if err != nil {
				return err
			}
			for _, p := range plots {
				fmt.Fprintln(e.Stdout, filepath.Join(dir, "plots", p.Name))
			}
			fmt.Fprintln(e.Stdout, filepath.Join(dir, "report.html"))
			return nil
		}}
}

func (e *Env) compareCmd() *cobra.Command {
	return &cobra.Command{Use: "compare RESULTS_DIR RESULTS_DIR", Short: "show two results folders side by side",
		SilenceErrors: true, SilenceUsage: true,
		Args: argsExactly(2, "compare: want two results folders"),
		RunE: func(_ *cobra.Command, args []string) error {
			a, err := report.Load(args[0])
			if err != nil {
				return err
			}
			b, err := report.Load(args[1])
			if err != nil {
				return err
			}
			return report.Compare(e.Stdout, a, b, args[0], args[1])
		}}
}

// argsExactly takes n positional arguments, and says what it wants otherwise.
func argsExactly(n int, want string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return Usagef("%s", want)
		}
		return nil
	}
}
