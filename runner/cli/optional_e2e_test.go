package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
)

// TestLeverCallsEndToEnd runs the scenarios of the levers that quietly do nothing on the local
// target with the catalog's local timings, through the command line: count rotation against
// long-lived gRPC streams and max_stream_duration on top of it (S19), the gRPC client's own
// levers against the stream cap and rotation (S20), and workers against a CPU limit (S21).
func TestLeverCallsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end suite run (about 100 s)")
	}
	var stdout, stderr bytes.Buffer
	only := "19-streams,19-streams-rotation,19-streams-duration,20-grpc-capped,20-grpc-rotation,20-grpc-pool,20-grpc-round-robin," +
		"21-cpu-limit-2-workers,21-cpu-limit-8-workers"
	err := Run(context.Background(), []string{"suite", "--target", "local", "--only", only, "--out", t.TempDir(), "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, stderr.String())
	}
	var sum suite.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, stdout.String())
	}
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
	// A default run leaves these calls out: they are fed by optional scenarios only.
	if _, ok := sum.Hypotheses["H-A"]; ok && sum.Hypotheses["H-A"].Verdict != analysis.Skipped {
		t.Errorf("H-A ran without its scenarios: %+v", sum.Hypotheses["H-A"])
	}
}
