// Command testplan prints what a tier of the tests runs (internal/testplan):
//
//	testplan packages [-lab auto|all|none] [-except dir,dir]
//	                                       make test's packages: the local lab's, and the real
//	                                       lab's where something they are built from changed
//	testplan e2e [-only|-except dir,dir]    make test-e2e's go test arguments: -run naming every
//	                                       test that asks testing.Short(), and their packages
//	testplan list [-except dir,dir]         every test, tab-separated: package folder, name, the
//	                                       targets that run it (-except: make test leaves these
//	                                       packages to make test-e2e whole)
//
// The Makefile calls it; what it leaves out and why goes to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"github.com/igwlab/igwlab/internal/testplan"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testplan:", err)
		os.Exit(1)
	}
}

// Run is the command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: testplan packages [-lab auto|all|none] | testplan e2e [-only|-except dir,dir] | testplan list [-except dir,dir]")
	}
	fs := flag.NewFlagSet("testplan "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	lab := fs.String("lab", "auto", "the real lab's packages: auto (where changed), all or none")
	except := fs.String("except", "", "comma-separated package folders to leave to their own make target")
	only := fs.String("only", "", "e2e: comma-separated package folders, the only ones to list")
	quiet := fs.Bool("q", false, "packages: say nothing on stderr")
	goCmd := fs.String("go", "go", "the go command")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	pkgs, err := testplan.Load(ctx, *goCmd, root)
	if err != nil {
		return err
	}
	switch args[0] {
	case "packages":
		if *quiet {
			stderr = io.Discard
		}
		return packages(ctx, root, pkgs, *lab, dirs(*except), stdout, stderr)
	case "e2e":
		return e2e(root, pkgs, dirs(*only), dirs(*except), stdout)
	case "list":
		return list(root, pkgs, dirs(*except), stdout)
	}
	return fmt.Errorf("%q: allowed packages, e2e or list", args[0])
}

func packages(ctx context.Context, root string, pkgs []testplan.Package, lab string, except map[string]bool, stdout, stderr io.Writer) error {
	var hit map[string]string
	var base string
	switch lab {
	case "all", "none":
	case "auto":
		files, b, ok := testplan.Changed(ctx, root)
		if !ok {
			fmt.Fprintln(stderr, "make test: not a git work tree, so no change can be told apart: testing the real lab's packages too")
			lab = "all"
			break
		}
		hit, base = testplan.Affected(pkgs, files), b
	default:
		return fmt.Errorf("-lab %q: allowed auto, all or none", lab)
	}
	var left []string
	for _, p := range pkgs {
		if except[p.Dir] {
			continue
		}
		if p.Lab && (lab == "none" || lab == "auto" && hit[p.ImportPath] == "") {
			left = append(left, p.Dir)
			continue
		}
		if why := hit[p.ImportPath]; why != "" {
			fmt.Fprintf(stderr, "make test: %s (the real lab's) is tested: %s changed\n", p.Dir, why)
		}
		fmt.Fprintln(stdout, p.ImportPath)
	}
	switch {
	case lab != "auto" || len(left) == 0:
	case len(hit) == 0:
		fmt.Fprintf(stderr, "make test: the real lab's packages (tests that link the Pulumi, Kubernetes or Helm SDK) are unchanged since %s and left out; LAB=all tests them, as CI does\n", base)
	default:
		fmt.Fprintf(stderr, "make test: left out, unchanged: %s\n", strings.Join(left, " "))
	}
	return nil
}

// dirs reads a comma-separated list of package folders ("runner/cli" or "./runner/cli/").
func dirs(list string) map[string]bool {
	set := map[string]bool{}
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(d), "./"), "/"); d != "" {
			set[d] = true
		}
	}
	return set
}

func e2e(root string, pkgs []testplan.Package, only, except map[string]bool, stdout io.Writer) error {
	names := map[string]bool{}
	var paths []string
	for _, p := range pkgs {
		if except[p.Dir] || len(only) > 0 && !only[p.Dir] {
			continue
		}
		tests, err := testplan.E2ETests(filepath.Join(root, filepath.FromSlash(p.Dir)))
		if err != nil {
			return err
		}
		if len(tests) == 0 {
			continue
		}
		paths = append(paths, p.ImportPath)
		for _, t := range tests {
			names[t] = true
		}
	}
	if len(paths) == 0 {
		return errors.New("no test asks testing.Short() in these packages")
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	fmt.Fprintln(stdout, "-run", testplan.RunPattern(list), strings.Join(paths, " "))
	return nil
}

// list says, for every test, which targets run it: make test runs every test with -short (the
// real lab's where changed or with LAB=all), and one that asks testing.Short() skips itself,
// or its end-to-end part, there and runs in full in make test-e2e.
func list(root string, pkgs []testplan.Package, except map[string]bool, stdout io.Writer) error {
	for _, p := range pkgs {
		tests, err := testplan.Tests(filepath.Join(root, filepath.FromSlash(p.Dir)))
		if err != nil {
			return err
		}
		unit := "make test"
		if p.Lab {
			unit = "make test LAB=all"
		}
		for _, t := range tests {
			where := unit
			switch {
			case except[p.Dir]:
				where = "make test-e2e"
			case t.AsksShort:
				where = unit + " (-short: skips or runs its short part), make test-e2e"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", p.Dir, t.Name, where)
		}
	}
	return nil
}
