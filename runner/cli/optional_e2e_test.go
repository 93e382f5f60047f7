package cli

import (
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// TestOptionalScenariosEndToEnd runs every scenario a default run leaves out on the local
// target, through the command line with the catalog's local timings (and 13-conn-balance, which
// a default run skips at one worker, at two), checks the calls of the levers that quietly do
// nothing: count rotation against long-lived gRPC streams and max_stream_duration on top of it
// (S19), the gRPC client's own levers against the stream cap and rotation (S20), and workers
// against a CPU limit (S21); then calibrates the simulated target against both runs.
func TestOptionalScenariosEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end suite runs of the optional scenarios (about 5 minutes)")
	}
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var optional []string
	for _, s := range cat.All() {
		// The simulated target runs them too (calibrateAgainst); east-west scenarios are the
		// local pool's alone and have their own test (TestEastWestEndToEnd).
		if cat.Optional(s.Name) && !cat.IsControl(s.Name) && s.RunsOn("sim") {
			optional = append(optional, s.Name)
		}
	}
	const seed = "1"
	args := calibrationArgs(optional)
	sum, dir := runSuite(t, append([]string{"--target", "local", "--seed", seed}, args...)...)
	for _, id := range []string{"S19 streams", "S20 gRPC client", "S21 CPU limit"} {
		if v := sum.Hypotheses[id]; v.Verdict != analysis.Pass {
			t.Errorf("%s: %s: %s", id, v.Verdict, v.Detail)
		}
	}
	rot := sum.Scenarios["19-streams-rotation"]
	if rot == nil || rot.LongStreams == nil || rot.LongStreams.DrainedOpen != 1 || rot.LongStreams.PastLimitShare < 0.9 {
		t.Errorf("19-streams-rotation: the drained connection should carry the streams to the end: %+v", rot)
	}
	over := sum.Scenarios["21-cpu-limit-8-workers"]
	if over == nil || over.CPU == nil || over.CPU.LimitCores != 2 || over.CPU.Workers != 8 || over.CPU.Throttled == 0 {
		t.Errorf("21-cpu-limit-8-workers: cAdvisor's view %+v", over)
	}
	// A run of optional scenarios leaves out the calls fed by the default ones.
	if v, ok := sum.Hypotheses["H-A"]; ok && v.Verdict != analysis.Skipped {
		t.Errorf("H-A ran without its scenarios: %+v", v)
	}
	balanceArgs := calibrationArgs([]string{"13-conn-balance"}, "--concurrency", "2")
	_, bdir := runSuite(t, append([]string{"--target", "local", "--seed", seed}, balanceArgs...)...)
	calibrateAgainst(t, "optional", readLocalRun(t, dir, args), readLocalRun(t, bdir, balanceArgs))
}
