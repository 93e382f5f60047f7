package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/stack"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// catalogFlag loads the built-in catalog plus an optional folder of user scenarios.
func loadCatalog(dir string) (*stacks.Catalog, error) {
	cat, err := stacks.Builtin()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return cat, nil
	}
	user, err := stacks.LoadDir(dir)
	if err != nil {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return nil, err // LoadDir names the flag: the folder is missing or not a folder
		}
		// The loader names files relative to the folder: say which folder, and which flag.
		return nil, fmt.Errorf("--catalog %s: %w", dir, err)
	}
	merged, err := cat.Merge(user)
	if err != nil {
		return nil, fmt.Errorf("--catalog %s: %w", dir, err)
	}
	return merged, nil
}

func runScenarios(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scenarios", stderr)
	dir := fs.String("catalog", "", "also load the scenario files in this folder")
	tgt := fs.String("target", "", "with k3d or existing (or local): each scenario's fixed time on that target and the suite's total")
	stackName := fs.String("stack", "lab", "with --target k3d/existing: the stack whose config (Pulumi.<stack>.yaml) sets the drain time and the workers per pod")
	repeat := fs.Int("repeat", 1, "with --target: runs per scenario (1..100)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cat, err := loadCatalog(*dir)
	if err != nil {
		return err
	}
	if *tgt != "" {
		if *repeat < 1 || *repeat > 100 {
			return usagef("--repeat %d: allowed 1..100", *repeat)
		}
		return printEstimate(stdout, cat, *tgt, *stackName, *repeat)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHYPOTHESIS\tCLIENT\tKNOBS\tTITLE")
	for _, s := range cat.All() {
		c := s.Client.Kind
		if s.Client.Mode != "" {
			c += "/" + s.Client.Mode
		}
		c += fmt.Sprintf(" c=%d", s.Client.Concurrency)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Hypothesis, c, len(s.Knobs.Set()), s.Title)
	}
	return tw.Flush()
}

// printEstimate prints each scenario's fixed time on a target and the suite's total: on a
// cluster target with the drain time and workers per pod of the stack's config file, or the
// program's defaults where it sets none.
func printEstimate(w io.Writer, cat *stacks.Catalog, tgt, stackName string, repeat int) error {
	drain, workers, source := time.Duration(0), 1, "the local pool drains at once"
	switch tgt {
	case stacks.TargetLocal:
	case "k3d", "existing":
		var err error
		if drain, workers, source, err = labTiming(stackName); err != nil {
			return err
		}
	default:
		return usagef("--target %q: allowed local, k3d, existing", tgt)
	}
	all, err := cat.Select(nil, nil)
	if err != nil {
		return err
	}
	e := suite.EstimateSuite(all, tgt, drain, workers, repeat)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDRAIN\tSETTLE\tWARM-UP\tWINDOW\tTOTAL")
	for _, r := range e.Rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\tskipped: %s\n", r.Name, r.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Drain, r.Settle, r.Warmup, r.Window, r.Total)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "total on %s: %s for %d scenario runs (%s); each switch's pulumi up and the stats reads come on top\n",
		tgt, e.Total, e.Runs, source)
	return nil
}

// labTiming reads the drain time and workers per pod from the stack's config file (without
// Pulumi: a plain read of Pulumi.<stack>.yaml), falling back to the program's defaults.
func labTiming(stackName string) (drain time.Duration, workers int, source string, err error) {
	drain, workers = infra.Defaults.GatewayDrainDuration, infra.Defaults.ProxyConcurrency
	root, err := infra.RepoRoot()
	if err != nil {
		return 0, 0, "", err
	}
	path := stack.ConfigFile(root, stackName)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, "", fmt.Errorf("--stack %s: %w", stackName, err)
	}
	var file struct {
		Config map[string]any `yaml:"config"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		return 0, 0, "", fmt.Errorf("%s: %w", path, err)
	}
	rel := filepath.Base(path)
	from := "default"
	if raw, ok := file.Config["igwlab:gatewayDrainDuration"].(string); ok {
		if drain, err = infra.ParseDrainDuration(raw); err != nil {
			return 0, 0, "", fmt.Errorf("%s: %w", rel, err)
		}
		from = rel
	}
	if raw, ok := file.Config["igwlab:proxyConcurrency"]; ok {
		if workers, err = strconv.Atoi(strings.TrimSpace(fmt.Sprint(raw))); err != nil || workers < 1 {
			return 0, 0, "", fmt.Errorf("%s: igwlab:proxyConcurrency %v: allowed a whole number >= 1", rel, raw)
		}
	}
	return drain, workers, fmt.Sprintf("drain %s (%s), %d worker(s) per gateway pod", drain, from, workers), nil
}
func runKnobs(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("knobs", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tRANGE\tDEFAULT (Envoy 1.35)\tWHAT IT DOES")
	for _, s := range stacks.Registry {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Path, s.Range(), s.Default, s.Doc)
	}
	return tw.Flush()
}
