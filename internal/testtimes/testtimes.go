// Package testtimes reads the `go test -json` stream of a `make test` run and says where its
// time went: each phase (a command make echoed), each package and the slowest tests. The
// table in docs/testing.md is its output, so the page shows a measured run, not a guess.
package testtimes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Phase is one command make ran: its wall time includes compiling, which -json's events do not show.
type Phase struct {
	Command  string
	Start    time.Time
	End      time.Time
	Packages []string
}

// Package is one test binary's run.
type Package struct {
	Name    string
	Seconds float64
	Tests   int
	Failed  bool
}

// Test is one top-level test.
type Test struct {
	Package, Name string
	Seconds       float64
	Failed        bool
}

// Run is everything one stream held.
type Run struct {
	Phases   []Phase
	Packages []Package
	Tests    []Test
	// Failures keeps each failed test's output, to show where the stream is not a clean run.
	Failures map[string]string
}

// Wall is the run's time from the first phase that has a time to the last one's end (read
// from a saved file, the commands before the first event have none).
func (r *Run) Wall() time.Duration {
	for _, p := range r.Phases {
		if !p.Start.IsZero() {
			return r.Phases[len(r.Phases)-1].End.Sub(p.Start)
		}
	}
	return 0
}

// Read takes the stream as make prints it: JSON events, and the commands make echoes between
// them, which start phases. now stamps the lines that carry no time of their own (pass
// time.Now when reading a live pipe); echo receives every line that is not an event, so a
// user still sees the commands and any build or vet error.
func Read(r io.Reader, now func() time.Time, echo io.Writer) (*Run, error) {
	run := &Run{Failures: map[string]string{}}
	pkgs := map[string]*Package{}
	names := map[string]map[string]bool{} // each package's top-level tests, counted once
	pkg := func(name string) *Package {
		if pkgs[name] == nil {
			pkgs[name], names[name] = &Package{Name: name}, map[string]bool{}
		}
		return pkgs[name]
	}
	output := map[string]*strings.Builder{}
	var last time.Time
	cur := func() *Phase {
		if len(run.Phases) == 0 {
			run.Phases = append(run.Phases, Phase{Command: "(before the first command)", Start: last})
		}
		return &run.Phases[len(run.Phases)-1]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(echo, line)
			t := now()
			if t.IsZero() {
				t = last
			}
			if startsPhase(line) {
				if len(run.Phases) > 0 {
					cur().End = t
				}
				run.Phases = append(run.Phases, Phase{Command: strings.TrimSpace(line), Start: t})
			}
			last = t
			continue
		}
		p := cur()
		if p.Start.IsZero() {
			p.Start = e.Time
		}
		p.End, last = e.Time, e.Time
		key := e.Package + " " + e.Test
		switch e.Action {
		case "start":
			cur().Packages = append(cur().Packages, e.Package)
		case "output":
			if e.Test != "" {
				b := output[key]
				if b == nil {
					b = &strings.Builder{}
					output[key] = b
				}
				b.WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				// A package make test runs with -short and make test-e2e again: its time is
				// both runs'.
				p := pkg(e.Package)
				p.Seconds += e.Elapsed
				p.Failed = p.Failed || e.Action == "fail"
				continue
			}
			if !strings.Contains(e.Test, "/") {
				run.Tests = append(run.Tests, Test{Package: e.Package, Name: e.Test, Seconds: e.Elapsed, Failed: e.Action == "fail"})
				if p := pkg(e.Package); !names[e.Package][e.Test] {
					names[e.Package][e.Test] = true
					p.Tests++
				}
			}
			if e.Action == "fail" && output[key] != nil {
				run.Failures[key] = output[key].String()
			}
			delete(output, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t := now(); !t.IsZero() && len(run.Phases) > 0 {
		cur().End = t
	}
	for _, p := range pkgs {
		run.Packages = append(run.Packages, *p)
	}
	sort.Slice(run.Packages, func(i, j int) bool {
		a, b := run.Packages[i], run.Packages[j]
		return a.Seconds > b.Seconds || a.Seconds == b.Seconds && a.Name < b.Name
	})
	sort.SliceStable(run.Tests, func(i, j int) bool { return run.Tests[i].Seconds > run.Tests[j].Seconds })
	return run, nil
}

// Failed says whether any package or test failed.
func (r *Run) Failed() bool {
	for _, p := range r.Packages {
		if p.Failed {
			return true
		}
	}
	return len(r.Failures) > 0
}

// startsPhase reports whether make echoed a command that runs tests: go vet, go test, or
// hack/gotest.sh (go test over test binaries kept between runs).
func startsPhase(line string) bool {
	return strings.Contains(line, "go test") || strings.Contains(line, "go vet") || strings.Contains(line, "gotest.sh")
}
