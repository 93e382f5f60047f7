package infra

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// cli runs the real Pulumi CLI (built by `make tools`) against a local file backend.
type cli struct {
	t               *testing.T
	bin, root, conf string
	env             []string
}

func newCLI(t *testing.T) *cli {
	bin := os.Getenv("IGWLAB_PULUMI_BIN")
	if bin == "" {
		t.Skip("set IGWLAB_PULUMI_BIN to the Pulumi tools folder (make test-pulumi does)")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"PULUMI_HOME=" + filepath.Join(tmp, "home"),
		"PULUMI_BACKEND_URL=file://" + filepath.Join(tmp, "state"),
		"PULUMI_CONFIG_PASSPHRASE=",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
	}
	for _, k := range []string{"GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "TMPDIR"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	// KUBECONFIG is left out on purpose: render mode refuses a kubeconfig.
	for _, d := range []string{"home", "state"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &cli{t: t, bin: filepath.Join(bin, "pulumi"), root: root, conf: filepath.Join(tmp, "Pulumi.render.yaml"), env: env}
}

func (c *cli) run(args ...string) string {
	c.t.Helper()
	full := append(args, "--cwd", c.root, "--non-interactive")
	if args[0] != "stack" {
		full = append(full, "--config-file", c.conf) // keep the test stack's config out of the repository
	}
	cmd := exec.Command(c.bin, full...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// renderStack is the test's stack; its config file lives in the test's temp folder.
const renderStack = "igwlab-render-test"

// renderedEnvoyFilters reads the EnvoyFilters the provider wrote, by object name.
func renderedEnvoyFilters(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(dir, "1-manifest", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil || obj["kind"] != envoyfilter.Kind {
			continue
		}
		out[obj["metadata"].(map[string]any)["name"].(string)] = obj
	}
	return out
}

// TestRenderModeWithRealPulumi runs the program with the real Pulumi CLI, its Go language host
// and the Kubernetes provider in render mode (manifests written to a folder, no cluster):
// preview and up, a scenario switch whose preview --diff changes only the EnvoyFilter, and
// every scenario's EnvoyFilter rendered side by side against the golden files.
func TestRenderModeWithRealPulumi(t *testing.T) {
	c := newCLI(t)
	out := t.TempDir()
	c.run("stack", "init", renderStack, "--secrets-provider", "passphrase")
	// stack init writes the stack's salt next to Pulumi.yaml; move it to the test's config file.
	if err := os.Rename(filepath.Join(c.root, "Pulumi."+renderStack+".yaml"), c.conf); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"cluster": "existing", "renderDir": out, "installUpstream": "false",
		"buildImages": "false", "monitoring": "true", "scenario": "02-trigger"} {
		c.run("config", "set", "igwlab:"+k, v)
	}
	c.run("preview")
	c.run("up", "--yes", "--skip-preview")
	efs := renderedEnvoyFilters(t, out)
	checkGolden(t, efs[envoyfilter.DefaultName], "02-trigger")

	c.run("config", "set", "igwlab:scenario", "04-mrpc")
	diff := c.run("preview", "--diff")
	t.Logf("preview --diff after switching to 04-mrpc:\n%s", diff)
	if !strings.Contains(diff, "max_requests_per_connection") {
		t.Errorf("preview --diff does not show the knob:\n%s", diff)
	}
	var plan struct {
		Steps []struct {
			Op  string `json:"op"`
			URN string `json:"urn"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(c.run("preview", "--json")), &plan); err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Steps {
		if s.Op != "same" && !strings.HasSuffix(s.URN, "::envoyfilter") {
			t.Errorf("switching the scenario would %s %s", s.Op, s.URN)
		}
	}
	c.run("up", "--yes", "--skip-preview")
	checkGolden(t, renderedEnvoyFilters(t, out)[envoyfilter.DefaultName], "04-mrpc")

	c.run("config", "set", "igwlab:renderAllScenarios", "true")
	c.run("up", "--yes", "--skip-preview")
	efs = renderedEnvoyFilters(t, out)
	cat, _ := stacks.Builtin()
	for _, n := range cat.Names() {
		checkGolden(t, efs[envoyfilter.DefaultName+"-"+n], n)
	}
}

func checkGolden(t *testing.T, got map[string]any, scenario string) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no EnvoyFilter rendered", scenario)
		return
	}
	b, err := os.ReadFile(filepath.Join("envoyfilter", "testdata", scenario+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got["spec"]), normalize(want["spec"])) {
		t.Errorf("%s: rendered spec differs from the golden file:\n%v\nwant\n%v", scenario, got["spec"], want["spec"])
	}
}
