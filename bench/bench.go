// Package bench measures igwlab against its peers and its own limits, side by side in one run:
// client efficiency (h2dial, fortio, h2load), the local harness's capacity, the suite's wall
// time and a scenario flip through the Automation API. Machines are noisy, so it reports
// ratios measured in the same run, never absolute times compared across runs.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/internal/cpuprofile"
	"github.com/igwlab/igwlab/internal/docsection"
	"github.com/igwlab/igwlab/internal/machine"
)

// Options configure a bench run.
type Options struct {
	Self           string // this binary, for the helper subprocesses
	H2dial, H2load string // client binaries
	Igwlab         string // the runner binary, for the suite time and the pool's cost
	BaseIgwlab     string // the build this one replaces, for the pool's cost side by side
	PulumiBin      string // folder with the Pulumi CLI and provider, for the flip time ("" skips it)
	Only           []string
	Rounds         int
	Conns          int // the per-connection layout's connections
	Streams        int // the multiplexed layout's streams
	ClientDuration time.Duration
	OutDir         string
	Now            func() time.Time
}

// Report is one bench run: what ran, where, and every measurement.
type Report struct {
	Date           time.Time      `json:"date"`
	Cores          int            `json:"cores"`
	Go             string         `json:"go"`
	CPU            string         `json:"cpu,omitempty"`
	H2dialVsFortio *float64       `json:"h2dial_vs_fortio,omitempty"`
	H2dialVsH2load *float64       `json:"h2dial_vs_h2load,omitempty"`
	Clients        *ClientResult  `json:"clients,omitempty"`
	Harness        *HarnessResult `json:"harness,omitempty"`
	Suite          *SuiteResult   `json:"suite,omitempty"`
	Flip           *FlipResult    `json:"flip,omitempty"`
	Pool           *PoolResult    `json:"pool,omitempty"`

	Goals   []Goal            `json:"goals"`
	Skipped map[string]string `json:"skipped,omitempty"`
}

// Goal is one target with what was measured against it.
type Goal struct {
	Name     string  `json:"name"`
	Want     string  `json:"want"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	Met      bool    `json:"met"`
}

var allParts = []string{"clients", "harness", "suite", "flip", "pool"}

// Run is the bench command: `bench [flags]`, plus the hidden helper subcommands.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "_server":
			return runServer(ctx, os.Stdin, stdout)
		case "_fortio":
			return runFortio(args[1:], stdout, stderr)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	o := Options{Self: self, Now: time.Now}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.H2dial, "h2dial", "bin/h2dial", "h2dial binary")
	fs.StringVar(&o.H2load, "h2load", "h2load", "h2load binary (Debian nghttp2-client)")
	fs.StringVar(&o.Igwlab, "igwlab", "bin/igwlab", "igwlab binary, for the suite time and the pool's cost")
	fs.StringVar(&o.BaseIgwlab, "base-igwlab", "bin/igwlab-base", "the igwlab build this one replaces, for the pool's cost side by side (make bench builds it from BENCH_BASE; missing skips the part)")
	fs.StringVar(&o.PulumiBin, "pulumi-bin", os.Getenv("IGWLAB_PULUMI_BIN"), "folder with the Pulumi CLI and Kubernetes provider, for the flip time (empty skips it)")
	only := fs.String("only", strings.Join(allParts, ","), "parts to run: "+strings.Join(allParts, ","))
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds of the client comparison (1..20)")
	fs.IntVar(&o.Conns, "c", 16, "connections in the per-connection layout (1..1000)")
	fs.IntVar(&o.Streams, "m", 500, "streams in flight in the multiplexed layout, the trigger scenario's (2..1000)")
	fs.DurationVar(&o.ClientDuration, "duration", 8*time.Second, "each client run (1s..5m)")
	fs.StringVar(&o.OutDir, "out", "bench/results", "folder for the JSON result")
	docs := fs.String("docs", "", "docs page whose "+DocSection+" section to rewrite from this run, when it ran every part (make bench gives docs/performance.md)")
	render := fs.String("render", "", "measure nothing: write this results file (bench/results/*.json, a run of every part) into -docs")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the emulator, in the harness part) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *render != "" {
		return renderDocs(*render, *docs)
	}
	o.Only = strings.Split(*only, ",")
	for _, p := range o.Only {
		if !slices.Contains(allParts, p) {
			return fmt.Errorf("-only %q: allowed %s", p, strings.Join(allParts, ","))
		}
	}
	if o.Rounds < 1 || o.Rounds > 20 || o.Conns < 1 || o.Conns > 1000 || o.Streams < 2 || o.Streams > 1000 || o.ClientDuration < time.Second || o.ClientDuration > 5*time.Minute {
		return errors.New("-rounds allowed 1..20, -c 1..1000, -m 2..1000, -duration 1s..5m")
	}
	stopProfile, err := cpuprofile.Start(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rep, err := Measure(ctx, o, stderr)
	if err != nil {
		return err
	}
	WriteTable(stdout, rep)
	b, _ := json.MarshalIndent(rep, "", "  ")
	path := filepath.Join(o.OutDir, rep.Date.UTC().Format("20060102T150405Z")+".json")
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwritten: %s\n", path)
	if *docs == "" {
		return nil
	}
	if !rep.Complete() {
		fmt.Fprintf(stderr, "bench: %s left as it is: this run did not measure every part (-only)\n", *docs)
		return nil
	}
	if err := docsection.Write(*docs, DocSection, Markdown(rep, filepath.ToSlash(path))); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "written: %s (section %s)\n", *docs, DocSection)
	return nil
}

// Measure runs the selected parts.
func Measure(ctx context.Context, o Options, progress io.Writer) (*Report, error) {
	rep := &Report{Date: o.Now().UTC(), Cores: runtime.NumCPU(), Go: runtime.Version(), CPU: machine.CPUModel(), Skipped: map[string]string{}}
	if slices.Contains(o.Only, "clients") {
		c, err := clientBench(ctx, o, progress)
		if err != nil {
			return nil, fmt.Errorf("client comparison: %w", err)
		}
		rep.Clients = c
		f, h := c.Layouts[0].Ratios["h2dial_vs_fortio"].Median, c.Layouts[0].Ratios["h2dial_vs_h2load"].Median
		rep.H2dialVsFortio, rep.H2dialVsH2load = &f, &h
		rep.Goals = append(rep.Goals,
			Goal{Name: "h2dial vs fortio, requests per client CPU-second", Want: ">= 2.5", Measured: f, Unit: "x", Met: f >= 2.5},
			Goal{Name: "h2dial vs h2load, requests per client CPU-second", Want: ">= 0.35", Measured: h, Unit: "x", Met: h >= 0.35})
	}
	if slices.Contains(o.Only, "harness") {
		h, err := harnessBench(ctx, o, progress)
		if err != nil {
			return nil, fmt.Errorf("harness capacity: %w", err)
		}
		rep.Harness = h
		rep.Goals = append(rep.Goals, Goal{Name: "harness capacity (busy time and rate within 5% of offered)", Want: ">= 20000",
			Measured: h.CapacityRPS, Unit: " rps", Met: h.CapacityRPS >= 20000})
	}
	if slices.Contains(o.Only, "suite") {
		st, err := suiteBench(ctx, o, progress)
		if err != nil {
			return nil, fmt.Errorf("suite time: %w", err)
		}
		rep.Suite = st
		rep.Goals = append(rep.Goals, Goal{Name: "local suite wall time, defaults", Want: "<= 180", Measured: st.WallS, Unit: " s", Met: st.WallS <= 180})
	}
	if slices.Contains(o.Only, "flip") {
		if o.PulumiBin == "" {
			rep.Skipped["flip"] = "no Pulumi CLI: set -pulumi-bin or IGWLAB_PULUMI_BIN (make bench builds it with make tools)"
		} else {
			f, err := flipBench(ctx, o, progress)
			if err != nil {
				return nil, fmt.Errorf("scenario flip: %w", err)
			}
			rep.Flip = f
			rep.Goals = append(rep.Goals, Goal{Name: "scenario flip through the Automation API, median", Want: "<= 5", Measured: f.MedianS, Unit: " s", Met: f.MedianS <= 5})
		}
	}
	if slices.Contains(o.Only, "pool") {
		if _, err := os.Stat(o.BaseIgwlab); err != nil {
			rep.Skipped["pool"] = fmt.Sprintf("no base build at %s (make bench builds it from the git ref BENCH_BASE)", o.BaseIgwlab)
		} else {
			p, err := poolBench(ctx, o, progress)
			if err != nil {
				return nil, fmt.Errorf("pool cost: %w", err)
			}
			rep.Pool = p
			rep.Goals = append(rep.Goals, poolGoals(p)...)
		}
	}
	if len(rep.Skipped) == 0 {
		rep.Skipped = nil
	}
	return rep, nil
}

// WriteTable prints the report as a table of ratios and goals.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "igwlab bench, %s, %d cores, %s\n", r.Date.Format(time.RFC3339), r.Cores, r.Go)
	if r.Clients != nil {
		for _, c := range r.Clients.Layouts {
			fmt.Fprintf(w, "\nclients, %s: %s; median of %d rounds\n", c.Name, c.Layout, len(c.Rounds["h2dial"]))
			fmt.Fprintf(w, "  %-8s %12s %10s %10s %9s %9s\n", "client", "req/CPU-s", "rps", "CPU s", "p50 ms", "p99 ms")
			for _, n := range []string{"h2dial", "fortio", "h2load"} {
				m := c.Median[n]
				fmt.Fprintf(w, "  %-8s %12.0f %10.0f %10.2f %9.3f %9.3f\n", n, m.PerCPUS, m.RPS, m.CPUS, m.P50Ms, m.P99Ms)
			}
			for _, k := range []string{"h2dial_vs_fortio", "h2dial_vs_h2load"} {
				fmt.Fprintf(w, "  %s = %.2fx  (rounds %s)\n", k, c.Ratios[k].Median, fmtList(c.Ratios[k].Rounds))
			}
		}
	}
	if h := r.Harness; h != nil {
		fmt.Fprintf(w, "\nharness: %s\n", h.Setup)
		fmt.Fprintf(w, "  %9s %9s %6s %9s %9s %12s %12s %s\n", "offered", "achieved", "busy", "p50 ms", "p99 ms", "emu us/req", "client us/req", "")
		for _, st := range h.Steps {
			mark := "ok"
			if !st.OK {
				mark = "off"
			}
			fmt.Fprintf(w, "  %9.0f %9.0f %6.3f %9.3f %9.3f %12.1f %12.1f %s\n", st.OfferedRPS, st.AchievedRPS, st.BusyRatio, st.P50Ms, st.P99Ms, st.EmulatorCPUUs, st.ClientCPUUs, mark)
		}
		fmt.Fprintf(w, "  capacity: %.0f rps\n", h.CapacityRPS)
	}
	if st := r.Suite; st != nil {
		fmt.Fprintf(w, "\nsuite: %s: %.0f s for %d scenarios\n", st.Command, st.WallS, st.Scenarios)
		for _, n := range st.Order {
			fmt.Fprintf(w, "  %-24s %5.1f s  %s\n", n, st.ScenarioSeconds[n], st.Status[n])
		}
	}
	if f := r.Flip; f != nil {
		fmt.Fprintf(w, "\nflip: %s\n  first up %.1f s; flips: median %.2f s, max %.2f s\n", f.Setup, f.FirstUpS, f.MedianS, f.MaxS)
		for i := 1; i < len(flipOrder); i++ {
			k := flipOrder[i-1] + " -> " + flipOrder[i]
			fmt.Fprintf(w, "  %-36s %5.2f s\n", k, f.Flips[k])
		}
	}
	if p := r.Pool; p != nil {
		fmt.Fprintf(w, "\npool: %s; median of %d rounds, this build against %s\n", p.Setup, len(p.Rounds["this"]), p.Base)
		fmt.Fprintf(w, "  %-6s %26s %18s\n", "build", "resident B / open stream", "CPU us / request")
		for _, b := range poolBuilds {
			fmt.Fprintf(w, "  %-6s %26.0f %18.1f\n", b, p.Median[b].BytesPerStream, p.Median[b].CPUPerRequest)
		}
		for _, k := range []string{"bytes_per_stream_this_vs_base", "cpu_per_request_this_vs_base"} {
			fmt.Fprintf(w, "  %s = %.2fx  (rounds %s)\n", k, p.Ratios[k].Median, fmtList(p.Ratios[k].Rounds))
		}
	}
	if len(r.Goals) > 0 {
		fmt.Fprintln(w, "\ngoals:")
		for _, g := range r.Goals {
			mark := "MET"
			if !g.Met {
				mark = "SHORT"
			}
			fmt.Fprintf(w, "  %-5s %-55s %10.2f%s  (want %s)\n", mark, g.Name, g.Measured, g.Unit, g.Want)
		}
	}
	for part, why := range r.Skipped {
		fmt.Fprintf(w, "  skipped %s: %s\n", part, why)
	}
}

func fmtList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, " ")
}

// renderDocs writes a saved run into the docs page, as make bench does after measuring.
func renderDocs(file, page string) error {
	if page == "" {
		return errors.New("-render needs -docs (the page to write, docs/performance.md)")
	}
	rep, err := LoadReport(file)
	if err != nil {
		return err
	}
	if !rep.Complete() {
		return fmt.Errorf("-render %s: that run did not measure every part (%s), so it cannot stand for the lab's performance", file, strings.Join(allParts, ","))
	}
	return docsection.Write(page, DocSection, Markdown(rep, filepath.ToSlash(file)))
}
