package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// The sample outputs the docs copy from runs hold numbers a run measured, which no test can
// measure again; what the code derives from those numbers must still be what the code derives.
// The samples that depend on nothing measured are regenerated and compared line for line.

// sampleLines yields every line of every output block in the docs with where it is.
func sampleLines(t *testing.T, each func(where string, b block, i int)) {
	t.Helper()
	for _, p := range docPages(t, false) {
		for _, b := range outputBlocks(p) {
			for i := range b.lines {
				each(p.path+":"+strconv.Itoa(b.line+i), b, i)
			}
		}
	}
}

var (
	columnGap  = regexp.MustCompile(`\s{2,}`)
	sweepPods  = regexp.MustCompile(`\((?:local target|[a-z0-9]+ target): (\d+) pods x`)
	bandColumn = regexp.MustCompile(`^(\d+\.\d{3}) \[(\d+\.\d{3}), (\d+\.\d{3})\]$`)
)

// TestDocsSweepRows: in every sweep table the docs show, a row's chance band is the band of
// its own connections over the pool's pods, and its judgement is the band's for its CV (the
// pods are the header's, or the local target's 6 where the sample shows the command instead).
func TestDocsSweepRows(t *testing.T) {
	var n int
	pods := 6
	sampleLines(t, func(where string, b block, i int) {
		l := b.lines[i]
		if i == 0 {
			pods = 6
		}
		if m := sweepPods.FindStringSubmatch(l); m != nil {
			pods, _ = strconv.Atoi(m[1])
		}
		if !sweepHeaderBefore(b, i) {
			return
		}
		cols := columnGap.Split(strings.TrimSpace(l), -1)
		if len(cols) < 6 {
			return
		}
		m := bandColumn.FindStringSubmatch(cols[2])
		if m == nil {
			return
		}
		n++
		cv, err1 := strconv.ParseFloat(cols[1], 64)
		k, err2 := strconv.Atoi(cols[4])
		if err1 != nil || err2 != nil {
			t.Errorf("%s: CV %q or connections %q is not a number", where, cols[1], cols[4])
			return
		}
		band := analysis.Chance(k, pods)
		if want := fmt.Sprintf("%.3f [%.3f, %.3f]", band.Median, band.Lo, band.Hi); cols[2] != want {
			t.Errorf("%s: the chance band of %d connections over %d pods is %s, the docs say %s", where, k, pods, want, cols[2])
		}
		// The CV is shown to three places: the run's own is within half a unit of it, and may
		// be one of the band's own values (one connection's CV over 6 pods is sqrt(5)).
		var judged []string
		for _, x := range []float64{cv - 0.0005, cv, cv + 0.0005, band.Lo, band.Median, band.Hi} {
			if math.Abs(x-cv) <= 0.0005 {
				v, _ := band.Judge(x)
				judged = append(judged, v)
			}
		}
		if !slices.Contains(judged, cols[3]) {
			t.Errorf("%s: CV %.3f against that band is %q, the docs say %q", where, cv, judged, cols[3])
		}
	})
	if n < 5 {
		t.Errorf("checked only %d sweep rows in the docs", n)
	}
}

// sweepHeaderBefore reports whether a sweep table's header comes before line i of b.
func sweepHeaderBefore(b block, i int) bool {
	for _, l := range b.lines[:i] {
		if strings.HasPrefix(l, "value  CV  ") {
			return true
		}
	}
	return false
}

var (
	capacityResult = regexp.MustCompile(`this pool serves (\d+\.\d)x the load at .+ \((\d+) rps against (\d+) rps\)`)
	sloText        = regexp.MustCompile(`meets (p\d+) <= (\d+) ms`)
)

// TestDocsCapacitySamples: a capacity row meets the SLO exactly when its percentile is within
// it, and the result's ratio is its two capacities' ratio.
func TestDocsCapacitySamples(t *testing.T) {
	var rows, results int
	limit := -1.0
	sampleLines(t, func(where string, b block, i int) {
		l := b.lines[i]
		if i == 0 {
			limit = -1
		}
		if m := capacityResult.FindStringSubmatch(l); m != nil {
			results++
			r, _ := strconv.ParseFloat(m[1], 64)
			with, _ := strconv.ParseFloat(m[2], 64)
			without, _ := strconv.ParseFloat(m[3], 64)
			if want := math.Round(10*with/without) / 10; r != want {
				t.Errorf("%s: %.0f rps against %.0f rps is %.1fx, the docs say %.1fx", where, with, without, want, r)
			}
		}
		if strings.HasPrefix(l, "curve  ") {
			if m := sloText.FindStringSubmatch(l); m != nil {
				limit, _ = strconv.ParseFloat(m[2], 64)
			}
			return
		}
		cols := columnGap.Split(strings.TrimSpace(l), -1)
		if limit < 0 || len(cols) < 5 || (cols[0] != "with" && cols[0] != "without") {
			return
		}
		rows++
		offered, err1 := strconv.ParseFloat(cols[1], 64)
		served, err2 := strconv.ParseFloat(cols[2], 64)
		p, err3 := strconv.ParseFloat(cols[3], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Errorf("%s: offered %q, served %q or percentile %q is not a number", where, cols[1], cols[2], cols[3])
			return
		}
		// A step misses when its percentile is over the limit, when it served under 90% of
		// the rate offered, or on errors (which the table does not show).
		slow, short := p > limit, served < 0.9*offered
		switch why := strings.TrimPrefix(cols[4], "no: "); {
		case cols[4] == "yes" && (slow || short):
			t.Errorf("%s: %.1f ms against %.0f ms, %.0f of %.0f rps served, the docs say it met the SLO", where, p, limit, served, offered)
		case cols[4] == "yes":
		case !strings.HasPrefix(cols[4], "no: "):
			t.Errorf("%s: %q is neither yes nor no: why", where, cols[4])
		case slow != strings.Contains(why, fmt.Sprintf(" %.1f ms", p)),
			short != strings.Contains(why, fmt.Sprintf("served %.0f of %.0f rps", served, offered)),
			!slow && !short && !strings.Contains(why, " errors in "):
			t.Errorf("%s: %.1f ms against %.0f ms, %.0f of %.0f rps served, and the docs say %q", where, p, limit, served, offered, cols[4])
		}
	})
	if rows < 5 || results < 1 {
		t.Errorf("checked only %d capacity rows and %d results in the docs", rows, results)
	}
}

var (
	progressLine = regexp.MustCompile(`^\[(\d+)/(\d+)\] (\S+) [█░]{20} +\d+% ETA \S+`)
	verifySample = regexp.MustCompile(`^verify: scenario (\S+) in effect on (\d+)/(\d+) gateway pods after \d+\.\d s \((.+); no listener draining\)$`)
)

// TestDocsRunLines: a progress line the docs show names a scenario of the catalog, and a verify
// line names one with the knobs that scenario sets.
func TestDocsRunLines(t *testing.T) {
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	sampleLines(t, func(where string, b block, i int) {
		l := b.lines[i]
		if m := progressLine.FindStringSubmatch(l); m != nil {
			n++
			if _, ok := cat.Get(m[3]); !ok {
				t.Errorf("%s: progress for %q, which the catalog does not have", where, m[3])
			}
			if a, _ := strconv.Atoi(m[1]); a > mustAtoi(m[2]) {
				t.Errorf("%s: scenario %s of %s", where, m[1], m[2])
			}
		}
		if m := verifySample.FindStringSubmatch(l); m != nil {
			n++
			sc, ok := cat.Get(m[1])
			if !ok {
				t.Errorf("%s: verify names %q, which the catalog does not have", where, m[1])
				return
			}
			if got := sc.Knobs.Short(); got != m[4] {
				t.Errorf("%s: scenario %s's knobs read %q, the docs say %q", where, m[1], got, m[4])
			}
		}
	})
	if n < 2 {
		t.Errorf("checked only %d progress and verify lines in the docs", n)
	}
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestDocsKnobsFromSample regenerates what `igwlab knobs --from` prints for the EnvoyFilter the
// docs show it on (Gardener's, from the shared real fixtures) and compares it line for line.
func TestDocsKnobsFromSample(t *testing.T) {
	const page, name = "docs/your-gateway.md", "ingress_envoyfilter.yaml"
	src := testutil.RealFixture(t, "envoyfilter-gardener-istio-1.29-ingressgateway-http2-max-concurrent-streams.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"knobs", "--from", filepath.Join(dir, name)}, &stdout, &stderr); err != nil {
		t.Fatalf("knobs --from: %v\n%s", err, stderr.String())
	}
	got := strings.ReplaceAll(stdout.String()+stderr.String(), filepath.Join(dir, name), name)
	var shown []string
	for _, p := range docPages(t, false) {
		if p.path != page {
			continue
		}
		for _, b := range outputBlocks(p) {
			if len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "--envoyfilter "+name+":") {
				shown = b.lines
			}
		}
	}
	if len(shown) == 0 {
		t.Fatalf("%s shows no output of igwlab knobs --from %s", page, name)
	}
	for _, l := range shown {
		if !strings.Contains(got, l+"\n") {
			t.Errorf("%s shows %q; igwlab knobs --from prints:\n%s", page, l, got)
		}
	}
}

// exampleScenario is the scenario file docs/scenarios.md shows as one of the user's own, with
// the folder and file name its first line gives.
func exampleScenario(t *testing.T) (dir, file string, body []byte, p docPage) {
	t.Helper()
	const page = "docs/scenarios.md"
	for _, p = range docPages(t, false) {
		if p.path != page {
			continue
		}
		blocks, _ := split(p.text)
		for _, b := range blocks {
			if b.lang != "yaml" || len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "# ") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(b.lines[0], "# "), ":")
			if d, f := filepath.Split(name); d != "" && strings.HasSuffix(f, ".yaml") {
				return filepath.Clean(d), f, []byte(strings.Join(b.lines, "\n") + "\n"), p
			}
		}
	}
	t.Fatalf("%s shows no scenario file of the user's own (a yaml block opening with # DIR/FILE.yaml)", page)
	return
}

// TestDocsScenarioExample: the scenario file the docs give as the user's own loads with
// --catalog as written, the misspelling they show fails with the very error they show, and the
// fragment that describes the pool over time is valid in a scenario. Outside -short the file
// runs on the local target and its client opens the connections the docs say.
func TestDocsScenarioExample(t *testing.T) {
	name, file, body, page := exampleScenario(t)
	root := t.TempDir()
	write := func(data []byte) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	id := strings.TrimSuffix(file, ".yaml")
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"scenarios", "--catalog", write(body)}, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "\n"+id+" ") {
		t.Fatalf("%s's scenario file does not load: %v\n%s", page.path, err, stdout.String())
	}

	// The error the docs show, for the misspelling they name.
	var shown string
	for _, b := range outputBlocks(page) {
		if len(b.lines) == 1 && strings.HasPrefix(b.lines[0], "igwlab: --catalog "+name+": "+file+":") {
			shown = b.lines[0]
		}
	}
	if shown == "" {
		t.Fatalf("%s shows no error for a misspelt %s", page.path, file)
	}
	bad := bytes.Replace(body, []byte("max_concurrent_streams:"), []byte("max_concurent_streams:"), 1)
	err := Run(context.Background(), []string{"scenarios", "--catalog", write(bad)}, &stdout, &stderr)
	if err == nil {
		t.Fatal("the misspelt file loads")
	}
	if got := "igwlab: " + strings.ReplaceAll(err.Error(), filepath.Join(root, name), name); got != shown {
		t.Errorf("%s shows\n  %s\nigwlab prints\n  %s", page.path, shown, got)
	}

	// The pool-over-time fragment, added to the file, is a valid scenario.
	blocks, _ := split(page.text)
	var fragments int
	for _, b := range blocks {
		if b.lang == "yaml" && len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "pool:") {
			fragments++
			merged := append(append([]byte{}, body...), []byte(strings.Join(b.lines, "\n")+"\n")...)
			if _, err := stacks.ParseFile(file, merged); err != nil {
				t.Errorf("%s:%d: the pool fragment is not valid in a scenario: %v", page.path, b.line, err)
			}
		}
	}
	if fragments == 0 {
		t.Errorf("%s shows no pool fragment", page.path)
	}

	if testing.Short() {
		return
	}
	out := t.TempDir()
	stdout.Reset()
	if err := Run(context.Background(), []string{"suite", "--target", "local", "--catalog", write(body), "--only", id, "--duration", "2s", "--out", out, "--json"}, &stdout, &stderr); err != nil {
		t.Fatalf("suite: %v\n%s", err, tail(stderr.String(), 20))
	}
	var sum suite.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	// 500 streams under a cap of 250: the shared client dials past one connection.
	if res := sum.Scenarios[id]; res == nil || res.ConnectionsTotal < 2 {
		t.Errorf("%s on the local target: %+v, want at least 2 connections", id, res)
	}
}
