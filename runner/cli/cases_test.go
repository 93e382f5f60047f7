package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/predict"
	"github.com/igwlab/igwlab/stacks"
)

// TestCases: each worked example from a public report, predicted on the simulated target over
// three placements, ranks first one of the levers its case names as the fix, and renders a
// server lever in Envoy Gateway's configuration. The seed pins the placements so a failure
// can be replayed (seeds 1 to 5 rank the same lever first, with the same value for all but
// one of gateway-5520's); an unseeded run draws placements a case may not survive.
func TestCases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every lever of every case on the simulated target")
	}
	cat, err := stacks.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range cat.All() {
		t.Run(sc.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"predict", "--target", "sim", "--catalog", "cases", "--scenario", sc.Name, "--repeat", "3", "--seed", "1", "--out", t.TempDir(), "--json", "-q", "--gateway", "envoy-gateway", "--gateway-name", "edge"}
			if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("predict: %v\n%s", err, stderr.String())
			}
			var p predict.Prediction
			if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
				t.Fatalf("predict.json: %v\n%s", err, stdout.String())
			}
			if p.Best == nil {
				t.Fatalf("no lever ranked to apply (%s); the case's fix is %v", p.Why, sc.Case.Fix)
			}
			lever, _, _ := strings.Cut(p.Best.Label, "=")
			found := false
			for _, f := range sc.Case.Fix {
				found = found || f == lever
			}
			if !found {
				t.Errorf("predict ranks %s first (%s); the case's fix is %v", p.Best.Label, p.Why, sc.Case.Fix)
			}
			if b := p.Best; b.Knob != "" {
				// The lever in Envoy Gateway's own configuration: its field, or the knob named as one it lacks.
				field := b.Knob[strings.LastIndexByte(b.Knob, '.')+1:]
				if f := p.Fix; f == nil || f.Dialect != "envoy-gateway" || !strings.Contains(strings.ReplaceAll(strings.ToLower(f.YAML), "_", ""), strings.ReplaceAll(field, "_", "")) && !strings.Contains(strings.Join(f.Lacks, " "), b.Knob) {
					t.Errorf("%s=%s in Envoy Gateway's configuration: %+v", b.Knob, b.Value, p.Fix)
				}
			}
		})
	}
}

// TestPredictBadInput: a saved scenario edited into nonsense, a missing file, an unknown
// scenario and flags out of range are refused with the file, the field and the range, and
// nothing runs.
func TestPredictBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(bad, []byte("name: mine\norder: 1\ntitle: x\nteaches: x\nwatch: x\nclient:\n  kind: grpc\n  concurrency: 0\n  qps: 10\nload:\n  duration: 10s\n  warmup: 1s\n  settle: 1s\ndiagnosed:\n  placement: sideways\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--scenario", bad}, []string{"mine.yaml", "client.concurrency", "client.qps", "diagnosed.placement", "allowed"}},
		{[]string{"--scenario", filepath.Join(dir, "absent.yaml")}, []string{"absent.yaml"}},
		{[]string{"--scenario", "no-such-scenario"}, []string{"no-such-scenario"}},
		{[]string{"--scenario", "02-trigger", "--repeat", "0"}, []string{"--repeat 0", "1..100"}},
		{[]string{}, []string{"--scenario is required"}},
		{[]string{"--scenario", "02-trigger", "--gateway", "nginx"}, []string{"--gateway \"nginx\"", "allowed", "envoy-gateway"}},
		{[]string{"--scenario", "02-trigger", "--gateway", "istio-gateway-api"}, []string{"--gateway-name"}},
	} {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), append([]string{"predict", "--target", "sim", "--out", dir}, c.args...), &stdout, &stderr)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", c.args, err, w)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 { // the bad file alone
		t.Errorf("something ran: %d entries in the results root", len(entries))
	}
}
