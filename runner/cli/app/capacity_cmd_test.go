package app

import "testing"

// TestCapacityBadInputRunsNothing: every bad capacity command line exits 2 with an error naming
// the flag and what it allows, and writes no results folder.
func TestCapacityBadInputRunsNothing(t *testing.T) {
	const mrpc = "hcm.common_http_protocol_options.max_requests_per_connection"
	runsNothing(t, "capacity", []badCase{
		{[]string{"--scenario", "02-trigger", "--slo", "p99<50ms"}, []string{"--slo", "want pNN=DURATION", "p99=50ms"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p95=50ms"}, []string{"--slo", `percentile "p95"`}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=soon"}, []string{"--slo", "not a duration"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=5m"}, []string{"--slo", "out of range", "1ms..60s"}},
		{[]string{"--scenario", "02-trigger"}, []string{"--slo", "required"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--knob", "hcm.max_requests=1000"}, []string{"--knob", `"hcm.max_requests" is not a knob`, "allowed: "}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--knob", mrpc + "=-5"}, []string{"--knob", mrpc, "out of range: allowed 0..4294967295 requests"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--knob", "hcm.http2_protocol_options.max_concurrent_streams=0"}, []string{"--knob", "allowed 1..2147483647 streams"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--knob", mrpc}, []string{"--knob", "want knob=value"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--knob", mrpc + "=10", "--knob", mrpc + "=20"}, []string{"--knob", "set twice"}},
		{[]string{"--scenario", "04-fortio", "--slo", "p99=100ms"}, []string{"--scenario", "fortio", "h2dial"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--start", "1"}, []string{"--start 1", "allowed 10..1000000"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--steps", "99"}, []string{"--steps 99", "allowed 2..30"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--window", "1ms"}, []string{"--window", "allowed 1s..10m"}},
		{[]string{"--scenario", "02-trigger", "--slo", "p99=100ms", "--tls", "--target", "k3d"}, []string{"--tls"}},
	})
}
