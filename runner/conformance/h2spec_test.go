package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the answers in docs/envoy-conformance.md's h2spec table from what the emulator does")

const docPath = "../../docs/envoy-conformance.md"

// h2specBin is the h2spec the tier runs (hack/h2spec-tool.sh builds it; make test-h2spec passes
// it in IGWLAB_H2SPEC_BIN). Without it the tier is skipped, except under CI.
func h2specBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("IGWLAB_H2SPEC_BIN")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("IGWLAB_H2SPEC_BIN is not set: the conformance tier needs h2spec (make test-h2spec builds it)")
		}
		t.Skip("IGWLAB_H2SPEC_BIN not set: run make test-h2spec")
	}
	return bin
}

// buildIgwlab builds the real command once for the package's tests: the tier judges what users
// run.
func buildIgwlab(t *testing.T) string {
	t.Helper()
	igwOnce.Do(func() {
		dir, err := os.MkdirTemp("", "igwlab-tier-")
		if err != nil {
			igwErr = err
			return
		}
		igwBin = filepath.Join(dir, "igwlab")
		if out, err := exec.Command("go", "build", "-o", igwBin, "../cmd/igwlab").CombinedOutput(); err != nil {
			igwErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if igwErr != nil {
		t.Fatal(igwErr)
	}
	return igwBin
}

var (
	igwOnce sync.Once
	igwBin  string
	igwErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if igwBin != "" {
		os.RemoveAll(filepath.Dir(igwBin))
	}
	os.Exit(code)
}

// tierConfig is one way the tier runs the pool: the codec, and a small or Envoy's default
// stream cap.
type tierConfig struct {
	name    string
	flags   []string
	nghttp2 bool
	small   bool
}

var tierConfigs = []tierConfig{
	{"oghttp2, cap 128", []string{"--scenario", "03-mcs-cap"}, false, true},
	{"nghttp2, cap 128", []string{"--scenario", "03-mcs-cap", "--http2-codec", "nghttp2"}, true, true},
	{"oghttp2, cap 2147483647", nil, false, false},
	{"nghttp2, cap 2147483647", []string{"--http2-codec", "nghttp2"}, true, false},
}

// streamLimitCase is h2spec's stream-concurrency case, which at Envoy 1.35's default cap writes
// 2^31 HEADERS before it reads anything: TestStreamLimitAtTheDefaultCap runs it on its own.
const streamLimitCase = "http2/5.1.2/1"

// TestH2specConformance runs every h2spec case against `igwlab serve`, at both codecs and at a
// small and the default stream cap, and fails when a case's frames, h2spec's verdict or the
// gateway's counters differ from the table, in either direction.
func TestH2specConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance tier runs h2spec at four configurations (about 2 minutes)")
	}
	bin := h2specBin(t)
	igw := buildIgwlab(t)
	ctx := context.Background()
	cases, err := Cases(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	// IGWLAB_H2SPEC_CASES picks some cases (comma-separated ids), to look at one case again.
	if only := os.Getenv("IGWLAB_H2SPEC_CASES"); only != "" && !*update {
		cases = strings.Split(only, ",")
	}
	rows, _, err := ReadTable(docPath)
	if err != nil && !*update {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[bool]map[string]Result{false: {}, true: {}}
	t.Run("configs", func(t *testing.T) {
		for _, cfg := range tierConfigs {
			if *update && !cfg.small {
				continue
			}
			for part := range caseParts {
				t.Run(fmt.Sprintf("%s, part %d", cfg.name, part+1), func(t *testing.T) {
					t.Parallel()
					runCases(t, ctx, bin, igw, cfg, partOf(cases, part), rows, &mu, got)
				})
			}
		}
	})
	if *update {
		writeRows(t, cases, rows, got)
	}
}

// caseParts is how many servers each configuration's cases are split over, each running its
// share one case at a time. A case waits on h2spec's timeout and the recorder's quiet, not on
// the CPU, so the parts run side by side (make test-h2spec's -parallel is tierConfigs times
// caseParts).
const caseParts = 4

// partOf is the part-th of caseParts shares of cases: every caseParts-th case, so that each
// part gets some of each section's slow cases.
func partOf(cases []string, part int) []string {
	var out []string
	for i, id := range cases {
		if i%caseParts == part {
			out = append(out, id)
		}
	}
	return out
}

// runCases runs cases one at a time against a serve of its own at cfg, recording each result
// in got and failing t where one differs from its row of the table.
func runCases(t *testing.T, ctx context.Context, bin, igw string, cfg tierConfig, cases []string, rows map[string]Row,
	mu *sync.Mutex, got map[bool]map[string]Result) {
	s, err := StartServe(ctx, igw, t.TempDir(), cfg.flags...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rec, err := NewRecorder(s.VIP)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	rec.Hold(caseHold)
	for _, id := range cases {
		if id == streamLimitCase && !cfg.small {
			continue
		}
		res, err := RunCase(ctx, bin, s.Target, rec, id, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got[cfg.nghttp2][id] = res
		mu.Unlock()
		if *update {
			continue
		}
		row, ok := rows[id]
		if !ok {
			t.Errorf("%s: no row in the table", id)
			continue
		}
		diff := mismatches(id, row.For(cfg.nghttp2), res)
		// A case that differs runs again with the recorder waiting longer for the
		// rest of each of h2spec's bursts, and must match then.
		for rerun := 1; len(diff) > 0 && rerun <= len(rerunHolds); rerun++ {
			rec.Hold(rerunHolds[rerun-1])
			res, err = RunCase(ctx, bin, s.Target, rec, id, 2*time.Second)
			rec.Hold(caseHold)
			if err != nil {
				t.Fatal(err)
			}
			if again := mismatches(id, row.For(cfg.nghttp2), res); len(again) > 0 {
				diff = again
				continue
			}
			t.Logf("%s matched the table on rerun %d; the first run: %s", id, rerun, strings.Join(diff, "; "))
			diff = nil
		}
		for _, d := range diff {
			t.Error(d)
		}
	}
}

// caseHold is how long the recorder waits for more of a burst of h2spec's writes before it
// passes the burst on (Recorder.Hold). The table gives Envoy's answer when a case's frames
// reach it together, and h2spec writes them one write(2) at a time: on two shared cores its
// process can be descheduled between two, and a request whose header block ended is then
// answered before the frame that breaks the connection arrives (CI saw http2/6.10/4 answered
// before its CONTINUATION). Holding costs the tier no time: its cases wait on h2spec's
// timeouts and the recorder's quiet, not on round trips (168 s for the tier with every case
// held 250 ms, as without).
const caseHold = 50 * time.Millisecond

// rerunHolds are the reruns of a case that differs from its row, each with how long the
// recorder holds h2spec's bursts in it.
var rerunHolds = []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}

// mismatches says how one case's result differs from its row.
func mismatches(id string, want Answer3, res Result) []string {
	var out []string
	if sends := Join(res.Frames, res.End); !MatchSends(sends, want.Sends) {
		out = append(out, fmt.Sprintf("%s: the gateway sent %q, the table says %q", id, sends, want.Sends))
	}
	if c := FormatCounters(res.Counters); !MatchCounters(res.Counters, want.Counters) {
		out = append(out, fmt.Sprintf("%s: counters %q, the table says %q", id, c, want.Counters))
	}
	if v := verdictText(res); !MatchVerdict(v, want.H2spec) {
		out = append(out, fmt.Sprintf("%s: h2spec %q, the table says %q", id, v, want.H2spec))
	}
	return out
}

func verdictText(r Result) string {
	if r.Verdict == "fail" {
		return "fail: " + r.Actual
	}
	return r.Verdict
}

// writeRows rewrites the table from the results, keeping each row's source.
func writeRows(t *testing.T, cases []string, old map[string]Row, got map[bool]map[string]Result) {
	t.Helper()
	var rows []Row
	for _, id := range cases {
		if r, ok := old[id]; ok && r.pattern() {
			rows = append(rows, r) // written by hand: the tier only checks it
			continue
		}
		og, ng := got[false][id], got[true][id]
		prev := old[id]
		r := Row{Case: id, Sends: Join(og.Frames, og.End), Counters: FormatCounters(og.Counters),
			H2spec: keepVerdict(prev.H2spec, verdictText(og)), Source: prev.Source}
		if s := Join(ng.Frames, ng.End); s != r.Sends {
			r.NgSends = s
		}
		if c := FormatCounters(ng.Counters); c != r.Counters {
			r.NgCounters = c
		}
		if v := verdictText(ng); !MatchVerdict(v, r.H2spec) {
			r.NgH2spec = keepVerdict(prev.For(true).H2spec, v)
		}
		rows = append(rows, r)
	}
	if err := WriteTable(docPath, rows); err != nil {
		t.Fatal(err)
	}
	pass := 0
	for _, r := range rows {
		if r.H2spec == "pass" {
			pass++
		}
	}
	fmt.Printf("wrote %d rows (%d pass under oghttp2) to %s\n", len(rows), pass, docPath)
}

// keepVerdict keeps a verdict cell that lists alternatives (written by hand) while the run
// gives one of them.
func keepVerdict(old, got string) string {
	if strings.Contains(old, " or ") && MatchVerdict(got, old) {
		return old
	}
	return got
}

// TestTableCoversEveryCase fails when the table lacks a row for a case h2spec has, or has one
// without its source. It needs h2spec for the case list.
func TestTableCoversEveryCase(t *testing.T) {
	bin := h2specBin(t)
	cases, err := Cases(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := ReadTable(docPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range cases {
		r, ok := rows[id]
		switch {
		case !ok:
			t.Errorf("%s: no row", id)
		case strings.TrimSpace(r.Source) == "":
			t.Errorf("%s: no source", id)
		}
	}
}
