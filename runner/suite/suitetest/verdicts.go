// Package suitetest holds checks the suite's own tests and the end-to-end tests share.
package suitetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/runner/suite"
)

// CheckVerdictsNeedNoEmulatorStats re-analyses the results folder dir as served and as a real
// gateway would have reported it, and fails t if any call differs (or, with recorded, differs
// from the calls summary.json holds). The end-to-end test runs it on a fresh run too.
func CheckVerdictsNeedNoEmulatorStats(t testing.TB, dir string, recorded bool) {
	t.Helper()
	_, asServed, err := suite.Reanalyze(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, asReal, err := suite.Reanalyze(dir, stats.RealGatewayView)
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	for i, v := range asServed {
		r := asReal[i]
		if v.ID != r.ID || v.Verdict != r.Verdict {
			t.Errorf("%s: %s from the emulator's stats, %s from a real gateway's (%s)", v.ID, v.Verdict, r.Verdict, r.Detail)
		}
		if v.Verdict != analysis.Skipped {
			called++
		}
		if strings.Contains(r.Detail, "hottest worker") {
			t.Errorf("%s: a real gateway's view reports worker busy time it cannot know: %s", r.ID, r.Detail)
		}
	}
	if called == 0 {
		t.Fatal("no call was made from the run's files")
	}
	for name, rs := range runs {
		for _, r := range rs {
			if r.OK() && (r.BusyMeasured || r.DrainsStarted != 0) {
				t.Errorf("%s: emulator-only numbers survived the real gateway's view: busy %v, drains %v", name, r.BusyMeasured, r.DrainsStarted)
			}
		}
	}
	if !recorded {
		return
	}
	var sum suite.Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for _, v := range asServed {
		if want := sum.Hypotheses[v.ID].Verdict; want != "" && v.Verdict != want {
			t.Errorf("%s: re-analysis gives %s, the run printed %s", v.ID, v.Verdict, want)
		}
	}
}
