package app

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// loadCatalog loads the built-in catalog plus an optional folder of user scenarios, and says
// on stderr where one of them takes the place or the role of a built-in one.
func (e *Env) loadCatalog(dir string) (*stacks.Catalog, error) { return loadCatalogTo(dir, e.Stderr) }

// loadCatalogTo is loadCatalog for a command that has its stderr but no Env.
func loadCatalogTo(dir string, stderr io.Writer) (*stacks.Catalog, error) {
	cat, err := mergeCatalog(dir)
	if err != nil {
		return nil, err
	}
	for _, w := range cat.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return cat, nil
}

func mergeCatalog(dir string) (*stacks.Catalog, error) {
	cat, err := stacks.Builtin()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return cat, nil
	}
	if load, ok := builtinCatalogs[dir]; ok {
		extra, err := load()
		if err != nil {
			return nil, err
		}
		return cat.Merge(extra)
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

func (e *Env) scenariosCmd() *cobra.Command {
	var dir, tgt, stackName string
	var repeat int
	c := Command("scenarios", "list the scenario catalog", func(cmd *cobra.Command) error {
		cat, err := e.loadCatalog(dir)
		if err != nil {
			return err
		}
		if tgt != "" {
			if repeat < 1 || repeat > 100 {
				return Usagef("--repeat %d: allowed 1..100", repeat)
			}
			d, err := gateway.Lookup(gateway.Kind(tgt))
			if err != nil {
				if e.Lab == nil {
					return e.HandOn(cmd.Context(), "igwlab scenarios --target "+tgt)
				}
				return Usagef("--target %q: allowed %s", tgt, gateway.KindList())
			}
			return printEstimate(e.Stdout, cat, d, gateway.Options{Stack: gateway.StackOptions{Name: stackName}}, repeat)
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
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
	})
	fs := c.Flags()
	fs.StringVar(&dir, "catalog", "", catalogHelp)
	fs.StringVar(&tgt, "target", "", "each scenario's fixed time on that kind of target and the suite's total: "+gateway.KindList()+
		map[bool]string{true: "", false: " (" + LabBinary + " adds the real lab's)"}[e.Lab != nil])
	fs.StringVar(&stackName, "stack", "lab", "with --target of the real lab: the stack whose config (Pulumi.<stack>.yaml) sets the drain time and the workers per pod")
	fs.IntVar(&repeat, "repeat", 1, "with --target: runs per scenario (1..100)")
	return c
}

// printEstimate prints each scenario's fixed time on a kind of target and the suite's total,
// with the drain time and workers per pod the kind reads from its settings.
func printEstimate(w io.Writer, cat *stacks.Catalog, d gateway.Driver, o gateway.Options, repeat int) error {
	timing, err := d.Timing(o)
	if err != nil {
		return err
	}
	all, err := cat.Select(nil, nil)
	if err != nil {
		return err
	}
	e := suite.EstimateSuite(all, d.Resolve, timing.Drain, timing.Workers, repeat)
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
		d.Kind, e.Total, e.Runs, timing.Source)
	return nil
}

func (e *Env) knobsCmd() *cobra.Command {
	var from EnvoyFilters
	c := Command("knobs", "list the gateway knobs scenarios may set, with Envoy's ranges and defaults; with --from, what an EnvoyFilter of yours sets", func(*cobra.Command) error {
		stdout := e.Stdout
		if len(from.Files) > 0 {
			_, err := io.WriteString(stdout, from.Text())
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KNOB\tRANGE\tDEFAULT (Envoy 1.35)\tWHAT IT DOES")
		for _, s := range stacks.Registry {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Path, s.Range(), s.Default, s.Doc)
		}
		return tw.Flush()
	})
	c.Example = "  igwlab knobs --from my-gateway-envoyfilter.yaml"
	c.Flags().Var(&from, "from", "an EnvoyFilter file (repeatable): print the knobs its patches set on the lab's gateway, and what the lab does not model")
	return c
}

// selection is what --only names, or, with a built-in catalog (production, cases) and no
// --only, that catalog's scenarios (its run is its own scenarios, not the lab's).
func selection(catalog string, only []string) ([]string, error) {
	load, ok := builtinCatalogs[catalog]
	if !ok || len(only) > 0 {
		return only, nil
	}
	extra, err := load()
	if err != nil {
		return nil, err
	}
	return extra.Names(), nil
}

// builtinCatalogs are the catalogs --catalog names rather than a folder: the production-shaped
// pools and the worked examples from public reports.
var builtinCatalogs = map[string]func() (*stacks.Catalog, error){
	stacks.ProductionName: stacks.Production,
	stacks.CasesName:      stacks.Cases,
}

// refuseTargets refuses, before anything runs, scenarios whose requires.targets leave out the
// target: a production-size pool runs on the simulated target only.
func refuseTargets(sel []*stacks.Scenario, target string) error {
	for _, s := range sel {
		if !s.RunsOn(target) {
			return Usagef("%s: requires.targets %v: the %s target cannot run %s; run it with --target %s",
				s.File, s.Requires.Targets, target, s.Name, s.Requires.Targets[0])
		}
	}
	return nil
}

// checkOnTarget refuses, before anything runs, a scenario the target cannot run (a client the
// simulated target has no model of, a pool or client beyond its limits), naming the file.
func checkOnTarget(t gateway.Target, sel []*stacks.Scenario) error {
	c, ok := t.(gateway.Checker)
	if !ok {
		return nil
	}
	for _, s := range sel {
		sc, _ := t.Resolve(s)
		if err := c.Check(sc); err != nil {
			return Usagef("%s: %v; nothing was run", s.File, err)
		}
	}
	return nil
}

// catalogHelp is --catalog's help, the same on every command that takes it.
const catalogHelp = "also load the scenario files in this folder; " + stacks.CasesName + " loads the worked examples from public reports (stacks/cases), " + stacks.ProductionName +
	" loads the built-in production-shaped scenarios (pools of tens of pods, for --target sim), and a suite then runs those"
