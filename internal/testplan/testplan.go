// Package testplan decides what `make test` and `make test-e2e` run. Its packages fall in two
// halves: the local lab's, and those whose tests link the Pulumi, Kubernetes or Helm SDKs (the
// real lab's). On a fresh machine the second half is most of the compiling (about 13 of the 32
// minutes a cold `make test` took), so `make test` vets and tests it only where something it
// is built from changed; CI always does. Tests that skip themselves under -short (the
// end-to-end suites, which measure rates in wall time) are `make test-e2e`'s: E2ETests finds
// them in the source, so the tiers cannot drift from what the tests say they are.
package testplan

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// labModules are the SDKs whose packages make a package the real lab's.
var labModules = []string{"github.com/pulumi/", "k8s.io/", "sigs.k8s.io/", "helm.sh/"}

// Package is one package of the module and what its tests are built from.
type Package struct {
	ImportPath string
	Dir        string          // relative to the module's root, slash-separated
	Lab        bool            // it or its tests link a Pulumi, Kubernetes or Helm package
	Internal   map[string]bool // the module's packages it and its tests import, itself included
}

// Load lists the module's packages under root with `go list -test`, which names every package
// a test binary links.
func Load(ctx context.Context, goCmd, root string) ([]Package, error) {
	mod, err := output(ctx, root, goCmd, "list", "-m")
	if err != nil {
		return nil, err
	}
	module := strings.TrimSpace(mod)
	out, err := output(ctx, root, goCmd, "list", "-test", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .Deps \" \"}}", "./...")
	if err != nil {
		return nil, err
	}
	byPath := map[string]*Package{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 {
			continue
		}
		// "p", "p [p.test]", "p_test [p.test]" and "p.test" all describe p's test binary.
		path := strings.TrimSuffix(strings.TrimSuffix(stripVariant(f[0]), ".test"), "_test")
		p := byPath[path]
		if p == nil {
			rel, err := filepath.Rel(root, f[1])
			if err != nil {
				return nil, err
			}
			p = &Package{ImportPath: path, Dir: filepath.ToSlash(rel), Internal: map[string]bool{path: true}}
			byPath[path] = p
			order = append(order, path)
		}
		for _, d := range strings.Fields(f[2]) {
			d = stripVariant(d)
			if d == module || strings.HasPrefix(d, module+"/") {
				p.Internal[d] = true
			}
			for _, m := range labModules {
				if strings.HasPrefix(d, m) {
					p.Lab = true
				}
			}
		}
	}
	pkgs := make([]Package, 0, len(order))
	for _, path := range order {
		pkgs = append(pkgs, *byPath[path])
	}
	return pkgs, sc.Err()
}

// stripVariant drops go list's " [p.test]" suffix from a package built for a test.
func stripVariant(s string) string {
	if i := strings.Index(s, " ["); i >= 0 {
		return s[:i]
	}
	return s
}

// Affected says which of the real lab's packages a change to the files touches: a file in a
// package's folder touches every package built from that one; a file outside every package's
// folder (the docs, the Makefile, go.mod) touches all of them, since the docs tests read the
// pages and the build reads go.mod. The string says why, for the line make test prints.
func Affected(pkgs []Package, changed []string) map[string]string {
	hit := map[string]string{}
	for _, f := range changed {
		owner := ""
		for _, p := range pkgs {
			if strings.HasPrefix(f, p.Dir+"/") && len(p.ImportPath) > len(owner) {
				owner = p.ImportPath
			}
		}
		for _, p := range pkgs {
			if !p.Lab || hit[p.ImportPath] != "" {
				continue
			}
			if owner == "" || p.Internal[owner] {
				hit[p.ImportPath] = f
			}
		}
	}
	return hit
}

// Changed lists the files that differ from the branch's upstream (where the branch forked
// from it), or from HEAD where there is none, committed or not, plus untracked ones. ok is
// false outside a git work tree, where nothing can be told apart.
func Changed(ctx context.Context, root string) (files []string, base string, ok bool) {
	if _, err := output(ctx, root, "git", "rev-parse", "--is-inside-work-tree"); err != nil {
		return nil, "", false
	}
	base = "HEAD"
	if up, err := output(ctx, root, "git", "merge-base", "HEAD", "@{upstream}"); err == nil {
		base = strings.TrimSpace(up)
	}
	diff, err := output(ctx, root, "git", "diff", "--name-only", base, "--")
	if err != nil {
		return nil, "", false
	}
	untracked, err := output(ctx, root, "git", "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return nil, "", false
	}
	set := map[string]bool{}
	for _, f := range strings.Fields(diff + "\n" + untracked) {
		set[f] = true
	}
	for f := range set {
		files = append(files, f)
	}
	sort.Strings(files)
	if base != "HEAD" && len(base) > 12 {
		base = base[:12]
	}
	return files, base, true
}

func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
