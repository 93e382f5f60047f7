package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad --rtt, --client-rtt, --upstream-rtt, --envoy-defaults, CPU and model values stop every command that
// opens the local pool before anything starts, with an error that names the flag and its
// range, and exit code 2.
func TestPoolFlagsBadInput(t *testing.T) {
	for _, cmd := range [][]string{{"suite"}, {"serve"},
		{"sweep", "--scenario", "04-fortio", "--knob", "hcm.common_http_protocol_options.max_requests_per_connection", "--values", "30,100"},
		{"capacity", "--scenario", "02-trigger", "--slo", "p99=100ms"}} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--rtt", "-5ms"}, "--rtt -5ms: allowed 0..1s"},
			{[]string{"--client-rtt", "2s"}, "--client-rtt 2s: allowed 0..1s"},
			{[]string{"--upstream-rtt", "-1s"}, "--upstream-rtt -1s: allowed 0..1s"},
			{[]string{"--rtt", "20"}, `invalid argument "20" for "--rtt" flag`},
			{[]string{"--envoy-defaults", "1.40"}, `--envoy-defaults "1.40": allowed 1.35 (Istio 1.27), 1.36 (Istio 1.28), 1.37 (Istio 1.29)`},
			{[]string{"--cpu-limit", "3x"}, `--cpu-limit "3x": allowed 100m..64 cores (2, 0.5 or 1500m), or none`},
			{[]string{"--cpu-limit", "65"}, `--cpu-limit "65": allowed 100m..64 cores`},
			{[]string{"--cpu-request", "none"}, `--cpu-request "none": allowed 100m..64 cores (2, 0.5 or 1500m)`},
			{[]string{"--cpu-limit", "2", "--cpu-request", "3"}, "--cpu-request 3 is above --cpu-limit 2"},
			{[]string{"--per-frame", "-1ms"}, "--per-frame -1ms: allowed 0..1s"},
			{[]string{"--concurrency", "two"}, `"two" is not a whole number of workers`},
		} {
			args := append(append(append([]string{}, cmd...), "--out", t.TempDir()), tc.args...)
			var out, errb bytes.Buffer
			code := Main(context.Background(), args, &out, &errb, nil)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, errb.String(), tc.want)
			}
		}
	}
}
