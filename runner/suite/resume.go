package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// LoadResume reads the summary.json of a run that did not finish, for `igwlab suite --resume`.
func LoadResume(dir string) (*Summary, error) {
	path := filepath.Join(dir, "summary.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no summary.json here: not a results folder of igwlab suite", dir)
	}
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Complete {
		return nil, fmt.Errorf("%s: this run finished at %s; there is nothing to resume (start a new run, or `igwlab report %s`)",
			dir, s.Finished.Format(time.RFC3339), dir)
	}
	if len(s.Command) == 0 || s.Command[0] != "suite" {
		return nil, fmt.Errorf("%s: the run did not record its command line (made by an older igwlab?), so it cannot be resumed with the same settings", path)
	}
	s.Dir = dir
	return &s, nil
}

// resumeInto carries an interrupted run's finished scenario runs into sum and returns how many
// runs of each scenario are already done. The resumed run must be the same run: same target,
// pool size, repeat count and scenario selection, or its verdicts would mix two setups.
func resumeInto(sum, prev *Summary, selected []*stacks.Scenario, now time.Time) (map[string]int, error) {
	for _, c := range []struct {
		field     string
		was, is   any
		different bool
	}{
		{"target", prev.Target, sum.Target, prev.Target != sum.Target},
		{"pods", prev.Pods, sum.Pods, prev.Pods != sum.Pods},
		{"concurrency", prev.Concurrency, sum.Concurrency, prev.Concurrency != sum.Concurrency},
		{"repeat", prev.Repeat, sum.Repeat, prev.Repeat != sum.Repeat},
		{"scenarios", strings.Join(prev.Order, ","), strings.Join(sum.Order, ","), !slices.Equal(prev.Order, sum.Order)},
	} {
		if c.different {
			return nil, fmt.Errorf("%s: cannot resume: summary.json has %s %v and this run would have %v",
				prev.Dir, c.field, c.was, c.is)
		}
	}
	done := map[string]int{}
	sum.Started, sum.Names = prev.Started, prev.Names
	sum.Resumed = append(append([]time.Time(nil), prev.Resumed...), now.UTC())
	if prev.ScenarioSeconds != nil {
		sum.ScenarioSeconds = prev.ScenarioSeconds
	}
	for _, sc := range selected {
		runs := prev.Runs[sc.Name]
		if len(runs) == 0 && prev.Scenarios[sc.Name] != nil {
			runs = []*analysis.Result{prev.Scenarios[sc.Name]}
		}
		var kept []*analysis.Result
		for _, r := range runs {
			if !r.Status.Finished() {
				break
			}
			kept = append(kept, r)
		}
		if len(kept) == 0 {
			continue
		}
		done[sc.Name] = len(kept)
		sum.Runs[sc.Name] = kept
		sum.Scenarios[sc.Name] = representative(kept)
	}
	return done, nil
}

// resumeText is the line that tells the user what a resumed run keeps and what it runs.
func resumeText(sum *Summary, done map[string]int) string {
	kept, toRun := 0, 0
	var failed []string
	for _, name := range sum.Order {
		kept += done[name]
		toRun += sum.Repeat - done[name]
		for _, r := range sum.Runs[name][:done[name]] {
			if r.Status == analysis.StatusFailed {
				failed = append(failed, name)
				break
			}
		}
	}
	s := fmt.Sprintf("resuming %s: %d scenario run(s) kept as they are, %d to run", sum.Dir, kept, toRun)
	if len(failed) > 0 {
		s += fmt.Sprintf("; kept as failed: %s (a new run with --only %s tries again)",
			strings.Join(failed, ", "), strings.Join(failed, ","))
	}
	return s
}
