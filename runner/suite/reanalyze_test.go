package suite_test

import (
	"path/filepath"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/runner/suite/suitetest"
	"github.com/igwlab/igwlab/stacks"
)

// TestVerdictsNeedNoEmulatorStats: every call is made from stats a real Istio gateway exposes
// with the same meaning. The raw pages of a full default local run (testdata/fullrun.tar.gz,
// made by `igwlab suite --target local` and trimmed to the files the analysis reads) are
// analysed twice, once as the emulator served them and once without its own igwlab.* stats,
// and must give the same verdicts, which must be the ones the run itself printed.
func TestVerdictsNeedNoEmulatorStats(t *testing.T) {
	dir := testutil.Untar(t, filepath.Join("testdata", "fullrun.tar.gz"))
	suitetest.CheckVerdictsNeedNoEmulatorStats(t, dir, true)
}

// TestDefaultRunOmitsOptionalCalls: a default run (the fixture) did not run the optional
// scenarios, so the calls only they feed are left out rather than listed as not evaluated.
func TestDefaultRunOmitsOptionalCalls(t *testing.T) {
	dir := testutil.Untar(t, filepath.Join("testdata", "fullrun.tar.gz"))
	runs, vs, err := suite.Reanalyze(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := stacks.Builtin()
	optionalFed := 0
	for _, v := range vs {
		for _, n := range v.Scenarios {
			if cat.Optional(n) && len(runs[n]) == 0 {
				t.Errorf("%s is listed though its optional scenario %s did not run: %s", v.ID, n, v.Detail)
			}
		}
	}
	for _, roles := range cat.Feeds() {
		all := len(roles) > 0
		for _, n := range roles {
			all = all && cat.Optional(n)
		}
		if all {
			optionalFed++
		}
	}
	if optionalFed == 0 {
		t.Skip("no call is fed only by optional scenarios")
	}
}
