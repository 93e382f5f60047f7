package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/report"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Reanalyze makes a run's calls again from the raw files in its results folder: each
// scenario's Prometheus pages before and after its window (stats_pre/, stats_post/,
// waypoint_stats/), its client's result (client_result.json), its time series, and what
// summary.json recorded of the run (order, status, window, peaks, the stat names in use, the
// knobs in force and the departures).
// view, when not nil, is applied to every page before it is read: RealGatewayView shows the
// run as a real gateway would have reported it.
func Reanalyze(dir string, view func(stats.Snapshot) stats.Snapshot) (map[string][]*analysis.Result, []analysis.Verdict, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a results folder: %w", dir, err)
	}
	var sum Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		return nil, nil, fmt.Errorf("%s/summary.json: %w", dir, err)
	}
	if view == nil {
		view = func(s stats.Snapshot) stats.Snapshot { return s }
	}
	runs := map[string][]*analysis.Result{}
	for _, name := range sum.Order {
		recorded := sum.Runs[name]
		if len(recorded) == 0 && sum.Scenarios[name] != nil {
			recorded = []*analysis.Result{sum.Scenarios[name]}
		}
		for i, rec := range recorded {
			if !rec.OK() {
				runs[name] = append(runs[name], rec)
				continue
			}
			sdir := filepath.Join(dir, name)
			if len(recorded) > 1 || sum.Repeat > 1 {
				sdir = filepath.Join(sdir, fmt.Sprintf("run-%d", i+1))
			}
			in, err := readInput(sdir, sum, rec, view)
			if err != nil {
				return nil, nil, err
			}
			a := analysis.Analyze(*in)
			a.Disturbed, a.Faults = rec.Disturbed || a.Disturbed, rec.Faults
			runs[name] = append(runs[name], a)
		}
	}
	cat, err := stacks.Builtin()
	if err != nil {
		return nil, nil, err
	}
	feeds := sum.Feeds // the run's own, where it recorded them (a user's scenario may have fed a call)
	if len(feeds) == 0 {
		feeds = cat.FeedsIn(func(name string) bool { return len(runs[name]) > 0 })
	}
	return runs, evaluate(runs, sum.Pods, cat, feeds), nil
}

func readInput(sdir string, sum Summary, rec *analysis.Result, view func(stats.Snapshot) stats.Snapshot) (*analysis.Input, error) {
	pre, err := readPages(filepath.Join(sdir, "stats_pre"), view)
	if err != nil {
		return nil, err
	}
	post, err := readPages(filepath.Join(sdir, "stats_post"), view)
	if err != nil {
		return nil, err
	}
	names := sum.Names
	if n, err := stats.Discover(append(append([]stats.Snapshot{}, pre...), post...), "httpbin"); err == nil {
		names.Cluster = n.Cluster
		if names.HCMPrefix == "" {
			names = n
		}
	}
	sc := analysis.Scenario{Name: rec.Name, Title: rec.Title, Hypothesis: rec.Hypothesis, Client: rec.Client, Knobs: rec.Knobs,
		Streams: rec.Streams, BodyBytes: rec.UploadBytes, LongLived: rec.LongStreams != nil}
	in := &analysis.Input{Scenario: sc, Departures: rec.Departures, Window: time.Duration(rec.WindowS * float64(time.Second)), Peaks: rec.Peaks,
		ClientRTT: time.Duration(rec.ClientRTTMs * float64(time.Millisecond))}
	for i := range post {
		in.Pre = append(in.Pre, stats.Extract(pre[i], names))
		in.Post = append(in.Post, stats.Extract(post[i], names))
	}
	if b, err := os.ReadFile(filepath.Join(sdir, "client_result.json")); err == nil {
		var r load.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s/client_result.json: %w", sdir, err)
		}
		in.Client = clientInput(&r)
	}
	if ts, err := report.ReadSeries(filepath.Join(sdir, "timeseries.csv")); err == nil {
		if c := ts.Column("closed"); len(c) > 0 {
			in.ClosedDuringLoad = c[len(c)-1]
		}
	}
	if err := readOverTime(sdir, in); err != nil {
		return nil, err
	}
	for _, side := range []struct {
		dir string
		to  *map[string]stats.CPU
	}{{"pre", &in.CPUPre}, {"post", &in.CPUPost}} {
		pages, err := readPages(filepath.Join(sdir, kubeletDir, side.dir), func(s stats.Snapshot) stats.Snapshot { return s })
		if err != nil {
			return nil, err
		}
		*side.to = containerCPU(pages)
	}
	wpPre, err := readPages(filepath.Join(sdir, "waypoint_stats", "pre"), view)
	if err != nil {
		return nil, err
	}
	wpPost, err := readPages(filepath.Join(sdir, "waypoint_stats", "post"), view)
	if err != nil {
		return nil, err
	}
	if len(wpPost) > 0 {
		wn := waypointNames(append(append([]stats.Snapshot{}, wpPre...), wpPost...))
		for i := range wpPost {
			in.WaypointPre = append(in.WaypointPre, stats.Extract(wpPre[i], wn))
			in.WaypointPost = append(in.WaypointPost, stats.Extract(wpPost[i], wn))
		}
	}
	return in, nil
}

// readPages reads every pod's page in a folder (<pod>.prom), sorted by pod; a missing folder
// holds none.
func readPages(dir string, view func(stats.Snapshot) stats.Snapshot) ([]stats.Snapshot, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []stats.Snapshot
	for _, e := range entries {
		pod, ok := strings.CutSuffix(e.Name(), ".prom")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		s, err := stats.ParseSnapshot(pod, time.Time{}, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
		out = append(out, view(s))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out, nil
}
