package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepBadInputRunsNothing: every bad sweep command line exits 2 with an error naming the
// flag and what it allows, and writes no results folder.
func TestSweepBadInputRunsNothing(t *testing.T) {
	const mrpc = "hcm.common_http_protocol_options.max_requests_per_connection"
	runsNothing(t, "sweep", []badCase{
		{[]string{"--scenario", "04-fortio", "--knob", "hcm.max_requests", "--values", "1,2"}, []string{"--knob", `"hcm.max_requests" is not a knob`, "allowed: "}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc + "x", "--values", "1,2"}, []string{"--knob", "did you mean"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30,5000000000"}, []string{"--values", mrpc, "out of range: allowed 0..4294967295 requests"}},
		{[]string{"--scenario", "04-fortio", "--knob", "hcm.http2_protocol_options.initial_stream_window_size", "--values", "1024,65535"}, []string{"--values", "initial_stream_window_size", "allowed 65535..2147483647 bytes"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "100..10x10"}, []string{"--values", mrpc, "hi 10 is below lo 100"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "100..1000"}, []string{"--values", "want lo..hixF"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "100..1000xten"}, []string{"--values", "want whole numbers"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc}, []string{"--values", "required"}},
		{[]string{"--scenario", "99-nope", "--knob", mrpc, "--values", "30"}, []string{"--scenario", "99-nope"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30", "--repeat", "0"}, []string{"--repeat 0", "allowed 1..100"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30", "--duration", "10ms"}, []string{"--duration", "allowed 1s..24h"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30", "--target", "k3d", "--tls"}, []string{"--tls", "local target's emulated pool only"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30", "--pods", "0"}, []string{"--pods 0", "allowed 1..64"}},
		{[]string{"--scenario", "02-trigger", "--client-streams", "0,500"}, []string{"--client-streams", "client.concurrency", "out of range: allowed 1..100000 streams"}},
		{[]string{"--scenario", "02-trigger", "--client-streams", "500,500"}, []string{"--client-streams", "listed twice"}},
		{[]string{"--scenario", "04-fortio", "--client-streams", "500,1100"}, []string{"--client-streams", "04-fortio's client is fortio", "h2dial on one shared transport"}},
		{[]string{"--scenario", "02-trigger", "--client-streams", "500", "--knob", mrpc}, []string{"--client-streams", "one axis per sweep"}},
		{[]string{"--client-streams", "500"}, []string{"--scenario is required"}},
		{[]string{"--scenario", "04-fortio", "--knob", mrpc, "--values", "30", "--set", mrpc + "=100"}, []string{"--set " + mrpc, "the knob the sweep varies"}},
		{[]string{"--scenario", "02-trigger", "--client-streams", "500", "--set", "hcm.http2_protocol_options.max_concurrent_streams=0"}, []string{"--set", "max_concurrent_streams", "allowed 1..2147483647"}},
		{[]string{"--scenario", "21-cpu-limit-8-workers", "--concurrency", "1,2,65"}, []string{"--concurrency", "pool.concurrency", "65 is out of range: allowed 1..64 Envoy workers per pod"}},
		{[]string{"--scenario", "21-cpu-limit-8-workers", "--concurrency", "2,2"}, []string{"--concurrency", "listed twice"}},
		{[]string{"--scenario", "02-trigger", "--concurrency", "1,2"}, []string{"--concurrency 1,2", "needs a CPU limit", "--cpu-limit"}},
		{[]string{"--scenario", "21-cpu-limit-8-workers", "--concurrency", "1,2", "--knob", mrpc}, []string{"--concurrency", "one axis per sweep"}},
		{[]string{"--concurrency", "1,2"}, []string{"--scenario is required"}},
	})
}

// badCase is a command line and what its error must say.
type badCase struct {
	args []string
	want []string
}

// runsNothing runs each bad command line of command: exit 2, an error that says every want,
// and no results folder.
func runsNothing(t *testing.T, command string, cases []badCase) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	for _, tc := range cases {
		args := append([]string{command, "--out", out, "-q"}, tc.args...)
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, &stdout, &stderr, nil)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", tc.args, code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%q: stderr %q does not say %q", tc.args, stderr.String(), w)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a bad command line wrote %s", out)
	}
}
