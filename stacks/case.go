package stacks

import (
	"embed"
	"fmt"
	"path"
	"regexp"
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
