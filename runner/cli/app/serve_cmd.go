package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/serve"
	"github.com/igwlab/igwlab/stacks"
)

func (e *Env) serveCmd() *cobra.Command {
	return e.flagCommand("serve", "keep the local gateway pool up for your own client; report what it did on Ctrl-C", serveFlags)
}

func serveFlags(fs *pflag.FlagSet) func(ctx context.Context, stdout, stderr io.Writer) error {
	var pf local.PoolFlags
	scenario := fs.String("scenario", "", "scenario whose knobs the pool runs with (default: Envoy's defaults)")
	port := fs.Int("port", 0, "port of the gateway VIP on 127.0.0.1 (0 picks a free one)")
	out := fs.String("out", "results", "results root; serve writes <out>/<UTC timestamp>-serve/")
	catalogDir := fs.String("catalog", "", catalogHelp)
	quiet := fs.BoolP("q", "q", false, "no live table on stderr")
	promConfig := fs.String("prometheus-config", "", "write a Prometheus scrape config for the running pool to this file")
	var ef EnvoyFilters
	fs.Var(&ef, "envoyfilter", "an EnvoyFilter of yours (repeatable): the pool runs with the knobs its patches set, on top of --scenario's; what the lab does not model is named")
	pf.Register(fs)
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		cfg, err := pf.Config()
		if err != nil {
			return UsageError{err}
		}
		if *port < 0 || *port > 65535 {
			return Usagef("--port %d: allowed 0..65535 (0 picks a free port)", *port)
		}
		cfg.VIPPort = *port
		if err := cfg.Check(); err != nil {
			return UsageError{err}
		}
		var sc *stacks.Scenario
		if *scenario != "" {
			cat, err := loadCatalogTo(*catalogDir, stderr)
			if err != nil {
				return err
			}
			if sc, err = cat.MustGet(*scenario); err != nil {
				return UsageError{fmt.Errorf("--scenario: %w", err)}
			}
		}
		if !ef.K.IsZero() {
			if sc == nil {
				sc = &stacks.Scenario{Name: "serve", Title: "your client against the local pool"}
			}
			sc = sc.WithKnobs(ef.K)
		}
		if len(ef.Files) > 0 && !*quiet {
			io.WriteString(stderr, ef.Text())
		}
		l, err := local.NewLocal(cfg)
		if err != nil {
			return err
		}
		defer l.Close()
		if *promConfig != "" {
			if err := writePromConfig(*promConfig, l, stdout); err != nil {
				return err
			}
		}
		o := serve.Options{Local: l, Scenario: sc, OutDir: *out, Out: stdout, Events: stderr}
		if !*quiet {
			o.Live, o.LiveTTY = stderr, isTerminal(stderr)
		}
		_, err = serve.Run(ctx, o)
		return err
	}
}

// writePromConfig writes a scrape config for the pool and says how to point Prometheus and the
// dashboard at it.
func writePromConfig(path string, l *local.Local, stdout io.Writer) error {
	cfg, err := dashboard.ScrapeConfig(time.Second, l.ScrapeTargets())
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, cfg); err != nil {
		return fmt.Errorf("--prometheus-config: %w", err)
	}
	vars := dashboard.LocalDefaults(l.Pool.Config().ListenerPort)
	fmt.Fprintf(stdout, "prometheus scrape config: %s\n  run: prometheus --config.file=%s --web.listen-address=127.0.0.1:9090\n", path, path)
	fmt.Fprintf(stdout, "  dashboard variables: hcm=%s listener=%s (pod and ztunnel keep their defaults)\n", vars["hcm"], vars["listener"])
	return nil
}

// termWidth is the terminal's width in columns, or 0 when w is not a terminal.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// flagCommand makes a command whose flags bind binds; the function it returns runs it.
func (e *Env) flagCommand(use, short string, bind func(fs *pflag.FlagSet) func(ctx context.Context, stdout, stderr io.Writer) error) *cobra.Command {
	var run func(ctx context.Context, stdout, stderr io.Writer) error
	c := Command(use, short, func(cmd *cobra.Command) error { return run(cmd.Context(), e.Stdout, e.Stderr) })
	run = bind(c.Flags())
	return c
}
