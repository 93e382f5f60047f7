package cli

import (
	"context"
	"io"
	"os"

	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/stacks"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var pf poolFlags
	scenario := fs.String("scenario", "", "scenario whose knobs the pool runs with (default: Envoy's defaults)")
	port := fs.Int("port", 0, "port of the gateway VIP on 127.0.0.1 (0 picks a free one)")
	out := fs.String("out", "results", "results root; serve writes <out>/<UTC timestamp>-serve/")
	catalogDir := fs.String("catalog", "", "also load the scenario files in this folder")
	quiet := fs.Bool("q", false, "no live table on stderr")
	pf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := pf.config()
	if err != nil {
		return err
	}
	cfg.VIPPort = *port
	if err := cfg.Check(); err != nil {
		return UsageError{err}
	}
	var sc *stacks.Scenario
	if *scenario != "" {
		cat, err := loadCatalog(*catalogDir)
		if err != nil {
			return err
		}
		if sc, err = cat.MustGet(*scenario); err != nil {
			return UsageError{err}
		}
	}
	l, err := target.NewLocal(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	o := suite.ServeOptions{Local: l, Scenario: sc, OutDir: *out, Out: stdout}
	if !*quiet {
		o.Live, o.LiveTTY = stderr, isTerminal(stderr)
	}
	_, err = suite.Serve(ctx, o)
	return err
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
