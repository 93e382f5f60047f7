package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/stacks"
)

// TestDiagnoseBaseline: one shared connection on a local pool is read once as the baseline;
// read again unchanged, diagnose --baseline says nothing changed; with count rotation applied,
// it says the spread moved, with the reconnects it costs and the knob that changed. A baseline
// of another gateway and a file that is not diagnose output are refused, naming file and field.
func TestDiagnoseBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for about ten seconds")
	}
	p := emulatortest.Gateways(t, 6, 1, 11)
	var urls []string
	for _, pod := range p.Pods() {
		urls = append(urls, pod.AdminURL())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := load.Run(ctx, load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 20, Path: "/get", QPS: 2000, Target: p.VIP(), Duration: 11 * time.Second})
		done <- err
	}()
	time.Sleep(time.Second)
	dir := t.TempDir()
	read := func(args ...string) (*diagnose.Report, string, error) {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), append([]string{"diagnose", "--admin", strings.Join(urls, ","), "--duration", "2s", "--json"}, args...), &stdout, &stderr)
		if err != nil {
			return nil, "", err
		}
		var r diagnose.Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("JSON: %v\n%s", err, stdout.String())
		}
		return &r, stdout.String(), nil
	}
	_, raw, err := read()
	if err != nil {
		t.Fatal(err)
	}
	before := filepath.Join(dir, "before.json")
	if err := os.WriteFile(before, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	same, _, err := read("--baseline", before)
	if err != nil {
		t.Fatal(err)
	}
	if c := same.Baseline; c == nil || c.Moved || !strings.HasPrefix(c.Verdict, "nothing changed") {
		t.Errorf("unchanged pool: %+v", same.Baseline)
	}

	var k stacks.Knobs
	if _, err := stacks.ParseKnobSetting(&k, "hcm.common_http_protocol_options.max_requests_per_connection=100"); err != nil {
		t.Fatal(err)
	}
	p.Apply(emulator.Setup{Knobs: k})
	time.Sleep(time.Second)
	after, _, err := read("--baseline", before)
	if err != nil {
		t.Fatal(err)
	}
	c := after.Baseline
	if c == nil || !c.Moved || !strings.HasPrefix(c.Verdict, "the spread moved") || !strings.Contains(strings.Join(c.Knobs, " "), "max_requests_per_connection") {
		t.Fatalf("with rotation: %+v", c)
	}
	if c.Warning == "" {
		t.Errorf("connections living well under a scrape interval get no warning: %+v", c)
	}
	if reconnects := c.Rows[5]; reconnects.Now <= reconnects.Before || reconnects.Now < 1 {
		t.Errorf("the reconnects rotation costs are not shown: %+v", reconnects)
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(strings.Replace(raw, `"listener": "`, `"listener": "9.9.9.9_1`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte(`{"pods": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{other, "names.listener"}, {garbage, "garbage.json"}, {filepath.Join(dir, "absent.json"), "absent.json"},
	} {
		if _, _, err := read("--baseline", c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--baseline %s: error %v, want one naming %q", filepath.Base(c.file), err, c.want)
		}
	}
	cancel()
	<-done
}
