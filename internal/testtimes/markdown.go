package testtimes

import (
	"fmt"
	"strings"
	"time"
)

// Setting is what the numbers depend on, printed above the tables.
type Setting struct {
	Date   time.Time
	Cores  int
	CPU    string
	Go     string
	Commit string
	Note   string // how the caches stood, e.g. "build cache warm"
	Module string // trimmed from package names
}

// Markdown renders the run: phases, packages that took a second or more, and the slowest tests.
func Markdown(r *Run, s Setting, topTests int) string {
	var b strings.Builder
	short := func(p string) string {
		if p == s.Module {
			return "."
		}
		return "./" + strings.TrimPrefix(p, s.Module+"/")
	}
	// make test is the phases up to its -short run; make test-e2e the rest.
	var unit time.Duration
	for i, p := range r.Phases {
		if strings.Contains(p.Command, " -short ") {
			unit = p.End.Sub(r.Phases[0].Start)
			if i == len(r.Phases)-1 {
				unit = 0 // make test alone: the total says it
			}
		}
	}
	fmt.Fprintf(&b, "`make test` then `make test-e2e` at commit %s, %s: **%s** in all", s.Commit, s.Date.UTC().Format("2006-01-02"), secs(r.Wall().Seconds()))
	if unit > 0 {
		fmt.Fprintf(&b, ", `make test` **%s** of it", secs(unit.Seconds()))
	}
	fmt.Fprintf(&b, " (%s, %d cores, %s; %s).\n\n", s.CPU, s.Cores, s.Go, s.Note)
	b.WriteString("| phase | wall time | packages |\n|---|---:|---|\n")
	for _, p := range r.Phases {
		what := fmt.Sprintf("%d", len(p.Packages))
		if len(p.Packages) == 1 {
			what = "`" + short(p.Packages[0]) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", phaseName(p.Command), secs(p.End.Sub(p.Start).Seconds()), what)
	}
	b.WriteString("\n| package | wall time | top-level tests |\n|---|---:|---:|\n")
	var restN int
	var restS float64
	for _, p := range r.Packages {
		if p.Seconds < 1 {
			restN++
			restS += p.Seconds
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d |\n", short(p.Name), secs(p.Seconds), p.Tests)
	}
	if restN > 0 {
		noun := "packages"
		if restN == 1 {
			noun = "package"
		}
		fmt.Fprintf(&b, "| %d %s under 1 s each | %s | |\n", restN, noun, secs(restS))
	}
	fmt.Fprintf(&b, "\n| test (the %d slowest) | package | time |\n|---|---|---:|\n", topTests)
	for i, t := range r.Tests {
		if i == topTests {
			break
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", t.Name, short(t.Package), secs(t.Seconds))
	}
	return b.String()
}

// phaseName shortens an echoed command to what tells the phases apart: make test's -short
// tier, make test-e2e's end-to-end tests (of some packages, hack/testplan's -only or -except),
// or a go test of one package.
func phaseName(cmd string) string {
	switch {
	case strings.Contains(cmd, "go vet"):
		return "go vet"
	case strings.Contains(cmd, "testplan e2e -only "):
		return "go test (end to end) ./" + firstField(cmd[strings.Index(cmd, "-only ")+len("-only "):])
	case strings.Contains(cmd, "testplan e2e"):
		return "go test (end to end, the other packages)"
	case strings.Contains(cmd, "gotest.sh") && strings.Contains(cmd, " -short "):
		return "go test -short (every package)"
	case strings.Contains(cmd, "go test"):
		i := strings.Index(cmd, "go test")
		f := strings.Fields(cmd[i:])
		if last := f[len(f)-1]; strings.HasPrefix(last, "./") {
			return "go test " + last
		}
		if strings.Contains(cmd, " -short ") {
			return "go test -short (every package)"
		}
		return "go test (the other packages)"
	}
	return cmd
}

func firstField(s string) string {
	if f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ')' || r == '"' }); len(f) > 0 {
		return f[0]
	}
	return ""
}

func secs(s float64) string {
	if s >= 90 {
		return fmt.Sprintf("%.0f s (%dm%02ds)", s, int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%.1f s", s)
}
