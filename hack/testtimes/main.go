// Command testtimes reads `make test GOTESTFLAGS=-json` on stdin and writes where the time went
// (phases, packages, slowest tests) as markdown: to stdout, or into docs/testing.md's
// test-times section with -write. A run with a failed test is reported and not written.
// hack/test-times.sh runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/igwlab/igwlab/internal/docsection"
	"github.com/igwlab/igwlab/internal/machine"
	"github.com/igwlab/igwlab/internal/testtimes"
)

func main() {
	if err := Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
}

// Run is the command.
func Run(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("testtimes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.String("write", "", "docs page whose test-times section to rewrite (empty: print to stdout)")
	commit := fs.String("commit", "", "the commit measured")
	note := fs.String("note", "", "how the caches stood")
	top := fs.Int("top", 25, "slowest tests to list (1..200)")
	live := fs.Bool("live", true, "stamp make's echoed commands with the time they arrive (false when reading a saved file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *top < 1 || *top > 200 {
		return fmt.Errorf("-top %d: allowed 1..200", *top)
	}
	now := func() time.Time { return time.Time{} }
	if *live {
		now = time.Now
	}
	run, err := testtimes.Read(stdin, now, stderr)
	if err != nil {
		return err
	}
	if len(run.Packages) == 0 {
		return errors.New("no go test -json events on stdin (run make test GOTESTFLAGS=-json)")
	}
	if run.Failed() {
		keys := make([]string, 0, len(run.Failures))
		for k := range run.Failures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stderr, "--- FAIL %s\n%s", k, run.Failures[k])
		}
		return fmt.Errorf("the run failed (%d failed tests); its times are not written", len(keys))
	}
	md := testtimes.Markdown(run, testtimes.Setting{Date: time.Now(), Cores: runtime.NumCPU(), CPU: machine.CPUModel(),
		Go: runtime.Version(), Commit: *commit, Note: *note, Module: "github.com/igwlab/igwlab"}, *top)
	if *write == "" {
		_, err := io.WriteString(stdout, md)
		return err
	}
	return docsection.Write(*write, "test-times", md)
}
