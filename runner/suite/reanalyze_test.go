package suite_test

import (
	"path/filepath"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/suite/suitetest"
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
