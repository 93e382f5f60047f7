package stacks

import (
	"embed"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// cases holds the worked examples: public reports of this family of problem, each as a
// scenario with the report's link, what its users saw and the fix igwlab finds
// (igwlab predict --catalog cases --scenario NAME).
//
//go:embed cases/*.yaml
var cases embed.FS

// CasesName is the name --catalog takes for the built-in worked examples.
const CasesName = "cases"

// Cases loads the worked examples.
func Cases() (*Catalog, error) {
	cat, err := Load(cases, "cases")
	if err != nil {
		return nil, err
	}
	for _, s := range cat.list {
		s.File = "stacks/cases/" + path.Base(s.File)
	}
	return cat, nil
}

// Case is a public report a scenario reproduces.
type Case struct {
	// Reports are the reports' links (GitHub issues).
	Reports []string `yaml:"reports"`
	// Saw is what the reports' users saw, in a sentence or two.
	Saw string `yaml:"saw"`
	// Fix names the levers (predict's labels, up to their "=") any of which predict must rank
	// first for the case, and Says why, in words.
	Fix  []string `yaml:"fix"`
	Says string   `yaml:"says"`
}

var reportPattern = regexp.MustCompile(`^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull|discussions)/[0-9]+$`)

func checkCase(c *Case, bad func(field, msg string)) {
	if c == nil {
		return
	}
	if len(c.Reports) == 0 {
		bad("case.reports", "list at least one report's link")
	}
	for i, r := range c.Reports {
		if !reportPattern.MatchString(r) {
			bad(fmt.Sprintf("case.reports[%d]", i), fmt.Sprintf("%q: want a GitHub issue, pull request or discussion link, such as https://github.com/envoyproxy/envoy/issues/42464", r))
		}
	}
	if c.Saw == "" || c.Says == "" {
		bad("case", "saw and says are both required")
	}
	if len(c.Fix) == 0 {
		bad("case.fix", "name at least one lever predict should rank first (as-is, max_requests_per_connection, client-pool, round-robin, pods, ...)")
	}
}

// CasesPage renders the worked examples as docs/cases.md: each case's reports, what their users
// saw, what igwlab says, the levers predict must rank first, and the commands that reproduce it.
func CasesPage(cat *Catalog) []byte {
	var b strings.Builder
	b.WriteString("# Cases: public reports, reproduced\n\n")
	b.WriteString("What this page is for: each public report of this family of problem that igwlab reproduces, as a\n")
	b.WriteString("scenario under [`stacks/cases/`](../stacks/cases/) (`--catalog cases`). Generated from those files by\n")
	b.WriteString("`go test ./stacks -run TestCasesPage -update`; the numbers each gives are in\n")
	b.WriteString("[predict: worked examples](predict.md#worked-examples). [Guide index](README.md).\n")
	for _, s := range cat.All() {
		c := s.Case
		if c == nil {
			continue
		}
		fmt.Fprintf(&b, "\n## %s: %s\n\n", s.Name, s.Title)
		var links []string
		for _, r := range c.Reports {
			links = append(links, fmt.Sprintf("[%s](%s)", reportName(r), r))
		}
		fmt.Fprintf(&b, "Reports: %s.\n\n", strings.Join(links, ", "))
		fmt.Fprintf(&b, "**What they saw.** %s\n\n", strings.TrimSpace(c.Saw))
		fmt.Fprintf(&b, "**What igwlab says.** %s\n\n", strings.TrimSpace(c.Says))
		fmt.Fprintf(&b, "**The fix** predict must rank first (`go test ./runner/cli -run TestCases`): %s.\n\n", "`"+strings.Join(c.Fix, "`, `")+"`")
		fmt.Fprintf(&b, "```\nigwlab predict --catalog cases --scenario %s --target sim --repeat 3\nigwlab predict --catalog cases --scenario %s    # the local target, the pool scaled down\n```\n", s.Name, s.Name)
	}
	return []byte(b.String())
}

// reportName is a report's link as owner/repo#n.
func reportName(url string) string {
	m := reportPattern.FindStringSubmatch(url)
	if m == nil {
		return url
	}
	rest := strings.TrimPrefix(url, "https://github.com/")
	parts := strings.Split(rest, "/")
	return parts[0] + "/" + parts[1] + "#" + parts[len(parts)-1]
}
