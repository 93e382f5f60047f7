package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// DocSection is the section of docs/performance.md that `make bench` writes from its results
// file; TestPerformanceDocIsTheLatestRun holds the page to that file.
const DocSection = "bench-results"

// Complete says whether the run measured, or said why it skipped, every part: only such a
// run's file may stand for the lab's performance in the docs.
func (r *Report) Complete() bool {
	has := map[string]bool{"clients": r.Clients != nil, "harness": r.Harness != nil, "suite": r.Suite != nil, "flip": r.Flip != nil, "pool": r.Pool != nil}
	for _, p := range allParts {
		if !has[p] && r.Skipped[p] == "" {
			return false
		}
	}
	return true
}

// LoadReport reads a results file.
func LoadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// LatestComplete is the newest results file in dir whose run is Complete ("" when none is).
// The files are named by their run's UTC time, so the names sort by date.
func LatestComplete(dir string) (string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "2*.json"))
	if err != nil {
		return "", err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for _, n := range names {
		r, err := LoadReport(n)
		if err != nil {
			return "", err
		}
		if r.Complete() {
			return n, nil
		}
	}
	return "", nil
}

var resultsFileRe = regexp.MustCompile("`(bench/results/[0-9TZ]+\\.json)`")

// DocResultsFile is the results file a rendered section names on its first line.
func DocResultsFile(section string) string {
	m := resultsFileRe.FindStringSubmatch(section)
	if m == nil {
		return ""
	}
	return m[1]
}

// Markdown is the results table docs/performance.md shows: every goal with its measurement,
// and the detail behind it, from one run. file is the results file's path from the repo root.
func Markdown(r *Report, file string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From `%s`: `make bench` on %s, %d cores (%s), %s.\n\n", file, r.Date.UTC().Format("2006-01-02 15:04 UTC"), r.Cores, r.CPU, r.Go)
	b.WriteString("| measure | result | goal |\n|---|---|---|\n")
	goal := func(prefix string) string {
		for _, g := range r.Goals {
			if strings.HasPrefix(g.Name, prefix) {
				verdict := "met"
				if !g.Met {
					verdict = "short"
				}
				return g.Want + ", " + verdict
			}
		}
		return ""
	}
	if c := r.Clients; c != nil {
		for _, l := range c.Layouts {
			f, h := l.Ratios["h2dial_vs_fortio"], l.Ratios["h2dial_vs_h2load"]
			fg, hg := "", ""
			if l == c.Layouts[0] {
				fg, hg = goal("h2dial vs fortio"), goal("h2dial vs h2load")
			}
			fmt.Fprintf(&b, "| h2dial vs fortio, requests per client CPU-second, %s | **%.2fx** (rounds %s) | %s |\n", l.Layout, f.Median, fmtList(f.Rounds), fg)
			fmt.Fprintf(&b, "| h2dial vs h2load, same layout | **%.2fx** (rounds %s) | %s |\n", h.Median, fmtList(h.Rounds), hg)
		}
	}
	if h := r.Harness; h != nil {
		at := ""
		for _, st := range h.Steps {
			if st.OfferedRPS == h.CapacityRPS {
				at = fmt.Sprintf(" (emulator %.0f µs CPU a request, client %.0f µs, p99 %.2f ms)", st.EmulatorCPUUs, st.ClientCPUUs, st.P99Ms)
			}
		}
		fmt.Fprintf(&b, "| harness capacity: the highest offered rate the pool's busy time and rate still match within 5%% (%s) | **%.0f rps**%s | %s |\n",
			h.Setup, h.CapacityRPS, at, goal("harness capacity"))
	}
	if s := r.Suite; s != nil {
		ran := 0
		for _, n := range s.Order {
			if !strings.HasPrefix(s.Status[n], "skipped") {
				ran++
			}
		}
		fmt.Fprintf(&b, "| `%s` (what `make run` runs) | **%.0f s**, %d scenarios, %d ran | %s |\n", s.Command, s.WallS, s.Scenarios, ran, goal("local suite wall time"))
	}
	if f := r.Flip; f != nil {
		fmt.Fprintf(&b, "| one scenario flip through the Automation API (%s) | **%.2f s** median, %.2f s max | %s |\n", f.Setup, f.MedianS, f.MaxS, goal("scenario flip"))
	}
	if p := r.Pool; p != nil {
		bs, cpu := p.Ratios["bytes_per_stream_this_vs_base"], p.Ratios["cpu_per_request_this_vs_base"]
		fmt.Fprintf(&b, "| the pool's cost against the build `make bench` compares with (%s) | **%.0f B resident per open stream**, %.2fx the base's (rounds %s); **%.0f µs serve CPU a request**, %.2fx (rounds %s) | %s |\n",
			p.Setup, p.Median["this"].BytesPerStream, bs.Median, fmtList(bs.Rounds), p.Median["this"].CPUPerRequest, cpu.Median, fmtList(cpu.Rounds), goal("resident bytes")+"; "+goal("pool CPU"))
	}
	parts := make([]string, 0, len(r.Skipped))
	for p := range r.Skipped {
		parts = append(parts, p)
	}
	sort.Strings(parts)
	for _, p := range parts {
		fmt.Fprintf(&b, "| %s | skipped: %s | |\n", p, r.Skipped[p])
	}
	return b.String()
}
