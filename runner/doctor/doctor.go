// Package doctor checks, before anything is created, what the real lab needs of the machine and
// the cluster, and says how to fix each thing that is missing: Docker reachable with enough
// CPUs and memory for what the lab requests, k3d and the Pulumi CLI at their minimum versions,
// kubectl, the lab's host ports free, and on a cluster of the user's its identity and
// allocatable CPU. `igwlab doctor` prints the report; `up` and `suite` on a cluster target run
// it first and stop on a failure.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Status is a check's outcome.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
)

// Check is one finding: what was checked, what was seen, and for a problem how to fix it.
type Check struct {
	Name   string
	Status Status
	Seen   string
	Fix    string
}

// Report is every check, in the order they ran.
type Report []Check

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, c := range r {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Write prints the report as a user reads it: one line per check, each fix under its problem.
func (r Report) Write(w io.Writer) {
	width := 0
	for _, c := range r {
		width = max(width, len(c.Name))
	}
	for _, c := range r {
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", c.Status, width, c.Name, c.Seen)
		if c.Fix != "" && c.Status != OK {
			fmt.Fprintf(w, "      %-*s  fix: %s\n", width, "", c.Fix)
		}
	}
}

// Err is the report's failures as one error ("" when none failed).
func (r Report) Err() error {
	var bad []string
	for _, c := range r {
		if c.Status == Fail {
			bad = append(bad, c.Name+": "+c.Seen+" (fix: "+c.Fix+")")
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("the machine is not ready for the real lab (igwlab doctor):\n  %s", strings.Join(bad, "\n  "))
}

// Tools runs the machine's command-line tools, as a user's shell would.
type Tools interface {
	// LookPath finds a tool on PATH.
	LookPath(name string) (string, error)
	// Output runs a tool and returns its standard output (its standard error in the error).
	Output(ctx context.Context, name string, args ...string) (string, error)
}
