package sweep

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// job is one run of a sweep: a value's repeat, into its folder.
type job struct {
	point, rep int
	sc         *stacks.Scenario
	label, dir string
}

// runForked runs the jobs side by side on copies of a target that forks (a simulation), one
// fresh copy per job seeded by the job's place in the sweep, so every run's placement is the
// same whatever the number of cores. Each run's outcome is said on rn's progress as it ends.
// It returns each job's result in the jobs' order (nil for a job ctx stopped before it began)
// and the stat names the runs discovered.
func runForked(ctx context.Context, f gateway.Forker, o Options, rn *suite.Runner, jobs []job) ([]*analysis.Result, string, error) {
	results := make([]*analysis.Result, len(jobs))
	var mu sync.Mutex
	var listener string
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res, names, err := runOne(ctx, f, o, i, jobs[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if res != nil {
					results[i] = res
					rn.Printf("%s: %s\n", jobs[i].label, suite.OneLine(res))
				}
				if listener == "" {
					listener = names
				}
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return results, listener, firstErr
}

// runOne runs job i on a fresh copy of the target: seeded by the job's place, or with Paired by
// its repeat, so that every variant's run r meets the same placement draw.
func runOne(ctx context.Context, f gateway.Forker, o Options, i int, j job) (*analysis.Result, string, error) {
	seed := i
	if o.Paired {
		seed = j.rep - 1
	}
	t, err := f.Fork(seed)
	if err != nil {
		return nil, "", fmt.Errorf("run %d: %w", i+1, err)
	}
	defer t.Close()
	settings := o.RunSettings
	settings.Progress, settings.ProgressTTY = nil, false
	settings.NoReport = true
	x, err := suite.NewRunnerFor(ctx, t, o.Duration, settings, nil)
	if err != nil {
		return nil, "", err
	}
	defer x.Close()
	res := x.Run(ctx, 0, j.label, j.sc, j.dir)
	return res, x.Names().Listener, nil
}

// forkable says whether the sweep's runs go side by side: the target forks and there is more
// than one run.
func forkable(o Options) (gateway.Forker, bool) {
	f, ok := o.Target.(gateway.Forker)
	return f, ok && len(o.Values)*o.Repeat > 1
}

// runDir is a run's folder: the value's, or its run-N under it with --repeat.
func runDir(dir, point string, rep, repeat int) string {
	if repeat > 1 {
		return filepath.Join(dir, point, fmt.Sprintf("run-%d", rep))
	}
	return filepath.Join(dir, point)
}
