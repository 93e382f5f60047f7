package simulated

import (
	"context"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/sim"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// BenchmarkDefaultSuite runs the default catalog on the simulated target as igwlab suite
// --target sim does (results folder, plots and report included) and reports the virtual
// seconds it simulated per wall second.
func BenchmarkDefaultSuite(b *testing.B) {
	cat, err := stacks.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cfg := sim.Defaults
		cfg.Seed = 1
		t, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		v0, t0 := t.Now(), time.Now()
		sum, err := suite.Run(context.Background(), suite.Options{Target: t, Catalog: cat, OutDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if !sum.Complete {
			b.Fatal("the suite did not complete")
		}
		b.ReportMetric(t.Now().Sub(v0).Seconds()/time.Since(t0).Seconds(), "sim-s/wall-s")
	}
}
