package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/doctor"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// TestAutomationAPIReadsTheStackConfigAtOnce reads a real stack's config (Pulumi CLI built here,
// local source, file backend) in one call, as igwlab up, preview and the doctor now do, and
// checks it against the CLI's reading of each key: a default from Pulumi.yaml alone, a default
// the stack file overrides, a secret (as its plain value) and a key set nowhere.
func TestAutomationAPIReadsTheStackConfigAtOnce(t *testing.T) {
	env := pulumiEnv(t)
	t.Setenv("PATH", env["PATH"])
	ctx := context.Background()
	dir := t.TempDir()
	project := "name: igwlab\nruntime: go\nconfig:\n  igwlab:clusterName: from-project\n  igwlab:scenario: 02-trigger\n"
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := pulumistack.Open(ctx, pulumistack.Options{Name: "lab", WorkDir: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetConfig(ctx, configkey.Full(configkey.Scenario), "04-mrpc", false); err != nil {
		t.Fatal(err)
	}
	if err := st.SetConfig(ctx, configkey.Full(configkey.JWTKey), "not-a-key", true); err != nil {
		t.Fatal(err)
	}
	all, err := st.AllConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{configkey.ClusterName: "from-project", configkey.Scenario: "04-mrpc",
		configkey.JWTKey: "not-a-key", configkey.KubeContext: ""} {
		one, set, err := st.GetConfig(ctx, configkey.Full(key))
		if err != nil {
			t.Fatal(err)
		}
		got, inAll := all[configkey.Full(key)]
		if got != want || one != want || inAll != set {
			t.Errorf("%s: read at once %q (present %v), alone %q (present %v); want %q", key, got, inAll, one, set, want)
		}
	}
	cfg, cerr, err := doctor.FromStack(ctx, st)
	if err != nil || cerr != nil {
		t.Fatalf("doctor.FromStack: %v, %v", err, cerr)
	}
	if cfg.ClusterName != "from-project" || cfg.Scenario != "04-mrpc" {
		t.Errorf("the program's reading: cluster name %q, scenario %q", cfg.ClusterName, cfg.Scenario)
	}
}
