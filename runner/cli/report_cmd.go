package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/igwlab/igwlab/runner/report"
)

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: igwlab report RESULTS_DIR   (rewrites RESULTS_DIR/plots and RESULTS_DIR/report.html)")
	}
	if err := fs.Parse(args); err != nil {
		return UsageError{err}
	}
	if fs.NArg() != 1 {
		return usagef("report: want one results folder (e.g. results/20261130T120000Z)")
	}
	dir := fs.Arg(0)
	run, err := report.Load(dir)
	if err != nil {
		return err
	}
	plots, err := report.Write(dir, run)
	if err != nil {
		return err
	}
	for _, p := range plots {
		fmt.Fprintln(stdout, filepath.Join(dir, "plots", p.Name))
	}
	fmt.Fprintln(stdout, filepath.Join(dir, "report.html"))
	return nil
}

func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", stderr)
	if err := fs.Parse(args); err != nil {
		return UsageError{err}
	}
	if fs.NArg() != 2 {
		return usagef("compare: want two results folders")
	}
	a, err := report.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := report.Load(fs.Arg(1))
	if err != nil {
		return err
	}
	return report.Compare(stdout, a, b, fs.Arg(0), fs.Arg(1))
}
