package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadCommandLines(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "99-x.yaml"), []byte("name: 99-x\nclient: {kind: h2dial, mode: shared, concurrency: 10, path: /get}\nload: {duration: 5s}\nknobs:\n  hcm:\n    http2_protocol_options:\n      max_concurrent_streams: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"nope"}, 2, []string{`unknown command "nope"`, "suite"}},
		{[]string{"suite", "--pods", "0"}, 2, []string{"pods 0", "1..64"}},
		{[]string{"suite", "--concurrency", "65"}, 2, []string{"concurrency 65", "1..64"}},
		{[]string{"suite", "--repeat", "0"}, 2, []string{"--repeat 0", "1..100"}},
		{[]string{"suite", "--duration", "10ms"}, 2, []string{"--duration 10ms", "1s..24h"}},
		{[]string{"suite", "--only", "02-trigr"}, 2, []string{`did you mean "02-trigger"`}},
		{[]string{"suite", "--balance", "sticky"}, 2, []string{"sticky", "random, round-robin, source-hash"}},
		{[]string{"suite", "--target", "mars"}, 2, []string{`"mars"`, "allowed"}},
		{[]string{"suite", "--service-time", "0s"}, 2, []string{"--service-time"}},
		{[]string{"suite", "--catalog", filepath.Join(bad, "missing")}, 1, []string{"--catalog", "no such file"}},
		{[]string{"suite", "--catalog", bad}, 1, []string{"99-x.yaml:7", "knobs.hcm.http2_protocol_options.max_concurrent_streams", "1..2147483647"}},
		{[]string{"serve", "--scenario", "07-waypoint-trigr"}, 2, []string{`did you mean "07-waypoint-trigger"`}},
		{[]string{"serve", "--port", "70000"}, 2, []string{"port 70000", "0..65535"}},
		{[]string{"suite", "extra"}, 2, []string{`unexpected argument "extra"`}},
		{[]string{"suite", "--no-such-flag"}, 2, []string{"no-such-flag"}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, &out, &errb)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.code, errb.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, errb.String(), w)
			}
		}
	}
}

func TestListings(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"scenarios"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "13-conn-balance-control") {
		t.Fatalf("scenarios: %d %s %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"knobs"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "65535..2147483647") {
		t.Fatalf("knobs: %d %s", code, out.String())
	}
}
