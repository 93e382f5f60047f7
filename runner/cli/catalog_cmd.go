package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

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
	if err := parse(fs, args); err != nil {
		return err
	}
	cat, err := loadCatalog(*dir)
	if err != nil {
		return err
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
