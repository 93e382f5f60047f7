package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
)

// TestVariantsFeedCalls: "S15, but for my 10 -> 30 pods". A user's copy of 15-scale-out under
// --catalog, by the built-in's name or by a name of its own with the same feeds, is what the
// call S15 is judged on in a run that has it, with a warning saying so; a run of the built-in
// alone still judges the built-in.
func TestVariantsFeedCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scale-out scenarios on the simulated target")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "stacks", "15-scale-out.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mine := strings.ReplaceAll(strings.Replace(string(raw), "replicas: 3", "replicas: 10", 1), "scale: 6}", "scale: 30}")
	if !strings.Contains(mine, "replicas: 10") || strings.Count(mine, "scale: 30}") != 2 { // the lab's event and the local one
		t.Fatal("the copy of 15-scale-out did not take my pod counts")
	}
	const call, role = "S15 scale-out", "pinned"
	for _, c := range []struct {
		name, file, only, fed, warn string
	}{
		{"same name", "15-scale-out.yaml", "15-scale-out,15-scale-out-rotation", "15-scale-out", "takes the place of the one in stacks/15-scale-out.yaml"},
		{"own name", "my-scale-out.yaml", "my-scale-out,15-scale-out-rotation", "my-scale-out", `feeds call S15 scale-out as pinned, as 15-scale-out (stacks/15-scale-out.yaml) does`},
		{"built-in alone", "my-scale-out.yaml", "15-scale-out,15-scale-out-rotation", "15-scale-out", `feeds call S15 scale-out as pinned`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			body := mine
			if name := strings.TrimSuffix(c.file, ".yaml"); name != "15-scale-out" {
				body = strings.Replace(body, "name: 15-scale-out", "name: "+name, 1)
			}
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := []string{"suite", "--target", "sim", "--seed", "1", "--catalog", dir, "--only", c.only, "--out", t.TempDir(), "--json", "-q"}
			if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("suite: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "warning: "+filepath.Join(dir, c.file)) || !strings.Contains(stderr.String(), c.warn) {
				t.Errorf("stderr lacks the warning %q:\n%s", c.warn, stderr.String())
			}
			var sum suite.Summary
			if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
				t.Fatalf("summary: %v\n%s", err, stdout.String())
			}
			if got := sum.Feeds.Scenario(call, role); got != c.fed {
				t.Errorf("%s %s fed by %q, want %q", call, role, got, c.fed)
			}
			v, ok := sum.Hypotheses[call]
			if !ok || v.Verdict == analysis.Skipped || len(v.Scenarios) == 0 || v.Scenarios[0] != c.fed {
				t.Fatalf("%s: %+v", call, v)
			}
			if c.fed != "15-scale-out" || c.name == "same name" {
				// My pool: 10 pods scaled to 30, as my file says.
				if res := sum.Scenarios[c.fed]; res == nil || res.OverTime == nil || len(res.OverTime.NewPods) != 20 {
					t.Errorf("%s: want 20 new pods (10 -> 30), got %+v", c.fed, res)
				}
			}
		})
	}
	// Two of the user's own feeding one role is refused: nothing would say which is judged.
	dir := t.TempDir()
	for _, n := range []string{"mine-a", "mine-b"} {
		if err := os.WriteFile(filepath.Join(dir, n+".yaml"), []byte(strings.Replace(mine, "name: 15-scale-out", "name: "+n, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	err = Run(context.Background(), []string{"suite", "--target", "sim", "--catalog", dir, "--out", t.TempDir()}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "mine-b.yaml") || !strings.Contains(err.Error(), `call "S15 scale-out" role "pinned" is already fed by mine-a`) {
		t.Errorf("two of mine feeding one role: %v", err)
	}
}
