package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadFlagsApplyNothing runs bad command lines of suite, serve, preview and up (the --set
// knob overrides included). Each must exit non-zero with an error naming the flag and the
// allowed range, and apply nothing: no results folder under --out, no Pulumi workspace under
// --inline-dir, no Prometheus config written.
//
// For a value the flag package cannot parse at all (99999999999999999999 for an int), the
// range comes from the flag's usage line, which the flag package prints after the error.
func TestBadFlagsApplyNothing(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "results")
	ws := filepath.Join(tmp, "workspace")
	prom := filepath.Join(tmp, "prometheus.yml")
	notDir := filepath.Join(tmp, "scenario.yaml")
	badCat := filepath.Join(tmp, "catalog")
	if err := os.MkdirAll(badCat, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{notDir, filepath.Join(badCat, "knob-huge.yaml")} {
		data, err := os.ReadFile(filepath.Join("..", "..", "stacks", "testdata", "bad", "knob-huge.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dupCat := filepath.Join("..", "..", "stacks", "testdata", "bad", "dup-role")
	const mcs = "hcm.http2_protocol_options.max_concurrent_streams"

	cases := []struct {
		args []string
		flag string
		want []string
	}{
		// a scenario only one target runs, a pool too large for the target: refused before anything runs
		{[]string{"suite", "--catalog", "production"}, "requires.targets", []string{"stacks/production/p01-grpc-300-clients.yaml", "the local target cannot run", "--target sim"}},
		{[]string{"sweep", "--catalog", "production", "--scenario", "p05-40x4-150k", "--knob", "hcm.common_http_protocol_options.max_requests_per_connection", "--values", "100,1000"},
			"requires.targets", []string{"stacks/production/p05-40x4-150k.yaml", "the local target cannot run"}},
		{[]string{"suite", "--target", "sim", "--pods", "1001"}, "--pods", []string{"pods 1001", "1..1000"}},
		{[]string{"suite", "--target", "sim", "--concurrency", "65"}, "--concurrency", []string{"65", "1..64"}},
		{[]string{"suite", "--target", "sim", "--tls"}, "--tls", []string{"does not model TLS"}},
		{[]string{"suite", "--target", "sim", "--memory-limit", "2Gi"}, "--memory-limit", []string{"does not model memory"}},
		{[]string{"suite", "--target", "local", "--harness"}, "--harness", []string{"only --target sim"}},
		// suite: pool sizing
		{[]string{"suite", "--pods", "0"}, "--pods", []string{"pods 0", "1..64"}},
		{[]string{"suite", "--pods", "65"}, "--pods", []string{"pods 65", "1..64"}},
		{[]string{"suite", "--pods", "-1"}, "--pods", []string{"pods -1", "1..64"}},
		{[]string{"suite", "--pods", "99999999999999999999"}, "-pods", []string{"value out of range", "1..64"}},
		{[]string{"suite", "--pods", "two"}, "-pods", []string{`"two"`, "1..64"}},
		{[]string{"suite", "--concurrency", "0"}, "--concurrency", []string{"concurrency 0", "1..64"}},
		{[]string{"suite", "--concurrency", "1e400"}, "-concurrency", []string{`"1e400"`, "1..64"}},
		{[]string{"suite", "--waypoint-pods", "33"}, "--waypoint-pods", []string{"33", "0..32"}},
		{[]string{"suite", "--waypoint-concurrency", "0"}, "--waypoint-concurrency", []string{"0", "1..64"}},
		{[]string{"suite", "--service-time", "0s"}, "--service-time", []string{"0s", "(0, 1s]"}},
		{[]string{"suite", "--service-time", "2s"}, "--service-time", []string{"2s", "(0, 1s]"}},
		{[]string{"suite", "--service-time", "soon"}, "-service-time", []string{`"soon"`}},
		{[]string{"suite", "--per-kib", "-1us"}, "--per-kib", []string{"-1µs", "allowed 0..1s"}},
		{[]string{"suite", "--conn-cost", "-1us"}, "--conn-cost", []string{"-1µs", "allowed 0..1s"}},
		{[]string{"suite", "--balance", "sticky"}, "--balance", []string{`"sticky"`, "random, round-robin, source-hash"}},
		{[]string{"suite", "--seed", "-1"}, "-seed", []string{`"-1"`}},
		{[]string{"suite", "--tls=maybe"}, "-tls", []string{`"maybe"`}},
		// suite: run shape
		{[]string{"suite", "--repeat", "0"}, "--repeat", []string{"1..100"}},
		{[]string{"suite", "--repeat", "101"}, "--repeat", []string{"1..100"}},
		{[]string{"suite", "--repeat", "99999999999999999999"}, "-repeat", []string{"value out of range", "1..100"}},
		{[]string{"suite", "--duration", "10ms"}, "--duration", []string{"1s..24h"}},
		{[]string{"suite", "--duration", "25h"}, "--duration", []string{"1s..24h"}},
		{[]string{"suite", "--duration", "-5s"}, "--duration", []string{"1s..24h"}},
		{[]string{"suite", "--duration", "1e400s"}, "-duration", []string{`"1e400s"`, "1s"}},
		{[]string{"suite", "--duration", "9999999999999h"}, "-duration", []string{`"9999999999999h"`, "1s"}},
		{[]string{"suite", "--target", "mars"}, "--target", []string{`"mars"`, "local, sim, k3d, existing"}},
		{[]string{"suite", "--only", "02-trigr"}, "--only", []string{`did you mean "02-trigger"`, "valid: 01-baseline"}},
		{[]string{"suite", "--skip", "13-conn-balanse"}, "--skip", []string{`did you mean "13-conn-balance"`}},
		{[]string{"suite", "--only", "02-trigger", "--skip", "02-trigger"}, "--only", []string{"select no scenario", "catalog: 01-baseline"}},
		{[]string{"suite", "--only", "08-buffers-control"}, "--only", []string{"--only 08-buffers-control: a control runs only right before the scenario it controls; --only 08-buffers runs both"}},
		{[]string{"suite", "--catalog", filepath.Join(tmp, "missing")}, "--catalog", []string{"no such file"}},
		{[]string{"suite", "--catalog", notDir}, "--catalog", []string{"not a directory"}},
		{[]string{"suite", "--catalog", badCat}, "--catalog " + badCat, []string{"knob-huge.yaml:14", "knobs." + mcs, "1..2147483647"}},
		{[]string{"suite", "--catalog", dupCat}, "--catalog", []string{"71-b.yaml", `call "H-A" role "trigger" is already fed by 71-a`}},
		{[]string{"suite", "-q=maybe"}, "-q", []string{`"maybe"`}},
		{[]string{"suite", "--no-such-flag"}, "-no-such-flag", []string{"not defined"}},
		{[]string{"suite", "extra"}, "extra", []string{"unexpected argument"}},
		// serve
		{[]string{"serve", "--port", "70000"}, "--port", []string{"70000", "0..65535"}},
		{[]string{"serve", "--port", "-1"}, "--port", []string{"-1", "0..65535"}},
		{[]string{"serve", "--scenario", "02-trigr", "--prometheus-config", prom}, "--scenario", []string{`did you mean "02-trigger"`, "valid: 01-baseline"}},
		{[]string{"serve", "--pods", "0"}, "--pods", []string{"pods 0", "1..64"}},
		{[]string{"serve", "--catalog", badCat, "--scenario", "knob-huge"}, "--catalog", []string{"knob-huge.yaml:14", "1..2147483647"}},
		// preview and up: knob overrides
		{[]string{"preview", "--set", "hcm.colour=1"}, "-set", []string{`"hcm.colour" is not a knob`, "allowed: " + mcs}},
		{[]string{"preview", "--set", "hcm.http2_protocol_options.max_concurent_streams=100"}, "-set", []string{`did you mean "` + mcs + `"`}},
		{[]string{"preview", "--set", mcs + "=0"}, "-set", []string{`"0" is out of range`, "1..2147483647 streams"}},
		{[]string{"up", "--set", mcs + "=lots"}, "-set", []string{`"lots"`, "1..2147483647 streams"}},
		{[]string{"up", "--set", mcs + "=99999999999999999999"}, "-set", []string{`"99999999999999999999"`, "1..2147483647 streams"}},
		{[]string{"up", "--set", mcs + "=-5"}, "-set", []string{`"-5"`, "1..2147483647 streams"}},
		{[]string{"up", "--set", "listener.per_connection_buffer_limit_bytes=1e400"}, "-set", []string{`"1e400"`, "0..4294967295 bytes"}},
		{[]string{"up", "--set", "hcm.drain_timeout=5"}, "-set", []string{"not a duration", "0s..315360000s"}},
		{[]string{"up", "--set", "hcm.drain_timeout=87601h"}, "-set", []string{"out of range", "0s..315360000s"}},
		{[]string{"up", "--set", "listener.enable_reuse_port=maybe"}, "-set", []string{`"maybe" is not true or false`}},
		{[]string{"up", "--set", "listener.connection_balance_config.exact_balance=false"}, "-set", []string{"write {} to set it"}},
		{[]string{"up", "--set", "noequals"}, "-set", []string{"want knob=value"}},
		{[]string{"up", "--set", "=5"}, "-set", []string{`"" is not a knob`, "allowed: " + mcs}},
		{[]string{"up", "--set", "hcm.drain_timeout=1s", "--set", "hcm.drain_timeout=2s"}, "-set", []string{"set twice", "once per knob"}},
		{[]string{"preview", "--scenario", "02-trigr"}, "--scenario", []string{`did you mean "02-trigger"`}},
		{[]string{"up", "--stack", "bad name!"}, "--stack", []string{"letters, digits"}},
		{[]string{"up", "--inline-dir", ws}, "--inline-dir", []string{"only with --inline"}},
	}
	counts := map[string]int{}
	for _, c := range cases {
		args := append([]string(nil), c.args...)
		switch args[0] {
		case "suite", "serve":
			args = append(args, "--out", out)
		default:
			if !strings.Contains(strings.Join(args, " "), "--inline-dir") {
				args = append(args, "--inline", "--inline-dir", ws)
			}
		}
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, &stdout, &stderr)
		msg := stderr.String()
		if code == 0 {
			t.Errorf("%q: accepted", c.args)
		}
		counts[args[0]]++
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, firstLines(msg, 3))
			}
		}
		if !strings.Contains(msg, c.flag) {
			t.Errorf("%q: stderr does not name %s:\n%s", c.args, c.flag, firstLines(msg, 3))
		}
		for _, p := range []string{out, ws, prom} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("%q: created %s before rejecting the command line", c.args, p)
			}
		}
	}
	t.Logf("bad command lines rejected: %v", counts)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
