package infra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/encoding"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// badConfigDir holds broken stack config files (Pulumi.<stack>.yaml), one broken value each.
// Every file starts with "# want: a; b; c": what the error must mention (the key, the value,
// the allowed range).
const badConfigDir = "testdata/badconfig"

// stackConfig reads a stack config file the way the Pulumi CLI does (the workspace loader,
// against the repository's Pulumi.yaml) and returns the config as the Go language host hands
// it to the program: key -> value text, and the secret keys. Secure values stay ciphertext: no
// passphrase is needed, and the program only checks that the secret is there.
func stackConfig(t *testing.T, path string) (map[string]string, []string, error) {
	t.Helper()
	proj, err := workspace.LoadProject(filepath.Join("..", "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := workspace.LoadProjectStackBytes(nil, proj, data, path, encoding.YAML)
	if err != nil {
		return nil, nil, err
	}
	plain, err := ps.Config.Decrypt(config.NopDecrypter)
	if err != nil {
		return nil, nil, err
	}
	conf := map[string]string{}
	for k, v := range plain {
		conf[k.String()] = v
	}
	// The project's defaults under the stack's values, as the CLI merges them
	// (ValidateStackConfigAndApplyProjectConfig).
	for k, t := range proj.Config {
		if _, set := conf[k]; !set && t.Default != nil {
			conf[k] = fmt.Sprint(t.Default)
		}
	}
	var secrets []string
	for _, k := range ps.Config.SecureKeys() {
		secrets = append(secrets, k.String())
	}
	return conf, secrets, nil
}

// runProgram runs the lab's Program on a stack config file with mocked resources, the config
// passed in PULUMI_CONFIG as the language host passes it, and returns how many resources it
// registered and the program's error.
func runProgram(t *testing.T, path string, body pulumi.RunFunc) (int, error) {
	t.Helper()
	conf, secrets, err := stackConfig(t, path)
	if err != nil {
		return 0, err // the CLI itself refuses the file: the program never runs
	}
	confJSON, _ := json.Marshal(conf)
	secretJSON, _ := json.Marshal(secrets)
	t.Setenv(pulumi.EnvConfig, string(confJSON))
	t.Setenv(pulumi.EnvConfigSecretKeys, string(secretJSON))
	m := &recorder{}
	var progErr error
	err = pulumi.RunErr(func(ctx *pulumi.Context) error {
		progErr = body(ctx)
		return nil
	}, pulumi.WithMocks("igwlab", "lab", m))
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.res), progErr
}

// TestLabStackConfigLoads is the control: a new stack, with no setting of its own, runs on the
// project's defaults in Pulumi.yaml through the same reading and is accepted, so a rejection
// below is the broken value's doing; and those defaults are the program's own.
func TestLabStackConfigLoads(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "Pulumi.lab.yaml")
	if err := os.WriteFile(empty, []byte("config: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	_, err := runProgram(t, empty, func(ctx *pulumi.Context) error {
		var err error
		cfg, err = LoadConfig(ctx)
		return err
	})
	if err != nil {
		t.Fatalf("Pulumi.yaml's defaults: %v", err)
	}
	want := Defaults
	cfg.GrafanaPassword, want.GrafanaPassword = pulumi.StringOutput{}, pulumi.StringOutput{}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Pulumi.yaml's defaults differ from the program's:\n%+v\nwant\n%+v", cfg, want)
	}
}

// TestBadStackConfigs runs the lab's Program on every broken stack config: each must fail
// with every wanted substring before a single resource is registered.
func TestBadStackConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(badConfigDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("only %d bad stack configs in %s", len(files), badConfigDir)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(raw, []byte("\n"))
			list, ok := strings.CutPrefix(string(first), "# want:")
			if !ok {
				t.Fatalf("the first line must be \"# want: ...\", got %q", first)
			}
			registered, err := runProgram(t, f, Program)
			if err == nil {
				t.Fatal("accepted")
			}
			if registered > 0 {
				t.Errorf("%d resources registered before the config was rejected", registered)
			}
			for _, w := range strings.Split(list, ";") {
				if w = strings.TrimSpace(w); w != "" && !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "DFW/9Gvsk2") {
				t.Errorf("error shows a secret value:\n%v", err)
			}
		})
	}
}

// TestBadKnobOverrides feeds igwlab:knobs values straight to ParseKnobs, the reading both the
// program and `igwlab up --set` rely on; the stack files above cover the way into it.
func TestBadKnobOverrides(t *testing.T) {
	cases := []struct{ raw, want string }{
		{``, "a JSON object"},
		{`null`, "a JSON object"},
		{`"hcm.drain_timeout=1s"`, "a JSON object"},
		{`{"hcm.drain_timeout": "1s",}`, "a JSON object"},
		{`{"hcm.drain_timeout": ["1s"]}`, `hcm.drain_timeout=[\"1s\"]`},
		{`{"hcm.drain_timeout": {"seconds": 1}}`, "hcm.drain_timeout={...}"},
		{`{"listener.connection_balance_config.exact_balance": false}`, "{} (present) or absent"},
		{`{"hcm.http2_protocol_options.max_concurrent_streams": 2147483648}`, "1..2147483647 streams"},
		{`{"hcm.http2_protocol_options.max_concurrent_streams": 1.5}`, "=1.5"},
		{`{"hcm.common_http_protocol_options.max_connection_duration": "87601h"}`, "0s..315360000s"},
		{`{"HCM.DRAIN_TIMEOUT": "1s"}`, "a knob"},
	}
	for _, c := range cases {
		_, err := ParseKnobs(c.raw)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "igwlab:knobs") {
			t.Errorf("%s: err = %v, want it to mention igwlab:knobs and %q", c.raw, err, c.want)
		}
	}
	// What the runner and `igwlab up --set` write is accepted, {} included.
	if _, err := ParseKnobs(`{"listener.connection_balance_config.exact_balance": {}, "hcm.drain_timeout": "1s"}`); err != nil {
		t.Fatal(err)
	}
}
