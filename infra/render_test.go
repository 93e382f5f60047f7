package infra

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
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

// prebuilt has the CLI run the lab's program built once by the test, instead of the Go
// language host building Pulumi.yaml's main anew for every preview and up (about 12 s of
// linking each, most of the render tier's time on two cores). A pulumi-language-go first on
// PATH hands the real one its -binary flag, as Pulumi.yaml's runtime.options.binary would
// (pulumi-language-go's Run); the CLI takes a language host on PATH over the one beside it
// (workspace.GetPluginPath, which then warns "using pulumi-language-go from $PATH").
// TestRenderModeRefusesTakingAK3dClusterAway still has the host build main for its preview, as
// a user's `pulumi preview` does. It returns the wrapper's path, which the CLI's warning names. The program
// goes to $IGWLAB_TESTBIN when set (make's test targets set it), where go build leaves it as it
// is when it is up to date instead of linking it again.
func (c *cli) prebuilt() string {
	c.t.Helper()
	dir := c.t.TempDir()
	prog := filepath.Join(dir, "lab")
	if bins := os.Getenv("IGWLAB_TESTBIN"); bins != "" {
		// One a test, as they run side by side; a folder that cannot be made fails go build.
		prog = filepath.Join(bins, "igwlab-lab-program-"+c.t.Name())
		_ = os.MkdirAll(bins, 0o755)
	}
	build := exec.Command("go", "build", "-o", prog, "./infra/cmd/lab")
	build.Dir = c.root
	if out, err := build.CombinedOutput(); err != nil {
		c.t.Fatalf("go build ./infra/cmd/lab: %v\n%s", err, out)
	}
	for i, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			c.env[i] = "PATH=" + dir + string(os.PathListSeparator) + v
		}
	}
	host := filepath.Join(filepath.Dir(c.bin), "pulumi-language-go")
	script := "#!/bin/sh\nexec '" + host + "' -binary '" + prog + "' \"$@\"\n"
	wrapper := filepath.Join(dir, "pulumi-language-go")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		c.t.Fatal(err)
	}
	return wrapper
}

func (c *cli) run(args ...string) string {
	c.t.Helper()
	out, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs the CLI and returns its output and error.
func (c *cli) try(args ...string) (string, error) {
	full := append(args, "--cwd", c.root, "--non-interactive")
	if args[0] != "stack" {
		full = append(full, "--config-file", c.conf) // keep the test stack's config out of the repository
	}
	cmd := exec.Command(c.bin, full...)
	cmd.Env = c.env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if slices.Contains(args, "--json") {
		cmd.Stderr = &errs // the CLI's warnings stay out of the JSON
	}
	err := cmd.Run()
	if err != nil && errs.Len() > 0 {
		return out.String() + errs.String(), err
	}
	return out.String(), err
}

// initStack makes a stack with the passphrase provider and moves the file stack init writes
// next to Pulumi.yaml to the test's own config file.
func (c *cli) initStack(name string) {
	c.t.Helper()
	c.run("stack", "init", name, "--secrets-provider", "passphrase")
	if err := os.Rename(filepath.Join(c.root, "Pulumi."+name+".yaml"), c.conf); err != nil {
		c.t.Fatal(err)
	}
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
	t.Parallel() // each test has its own Pulumi home and state (newCLI); the other one's CLI links the program for each command
	c := newCLI(t)
	wrapper := c.prebuilt()
	out := t.TempDir()
	c.initStack(renderStack)
	for k, v := range map[string]string{"cluster": "existing", "renderDir": out, "installUpstream": "false",
		"buildImages": "false", "monitoring": "true", "scenario": "02-trigger"} {
		c.run("config", "set", "igwlab:"+k, v)
	}
	if p := c.run("preview"); !strings.Contains(p, wrapper) {
		t.Fatalf("pulumi preview did not run the prebuilt program's language host %s:\n%s", wrapper, p)
	}
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
		// The program reads its own last outputs (the stack reference "self") on every run.
		if s.Op == "read" && strings.HasSuffix(s.URN, "pulumi:pulumi:StackReference::self") {
			continue
		}
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

// TestRenderModeRefusesTakingAK3dClusterAway: a stack whose last update held a k3d cluster (its
// state as such an update leaves it, imported) and whose config now names an existing cluster
// is refused by the real CLI at preview and at up, before anything is applied: the program reads
// its own last outputs through a stack reference to itself, on the file backend. The state
// holds nothing of the lab afterwards.
func TestRenderModeRefusesTakingAK3dClusterAway(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const stack = "igwlab-guard-test"
	c.initStack(stack)
	state := map[string]any{"version": 3, "deployment": map[string]any{
		"manifest": map[string]any{"time": "2026-12-01T10:00:00Z", "magic": "", "version": ""},
		"resources": []any{map[string]any{"urn": "urn:pulumi:" + stack + "::igwlab::pulumi:pulumi:Stack::igwlab-" + stack,
			"custom": false, "type": "pulumi:pulumi:Stack",
			"outputs": map[string]any{K3dClusterOutput: "igw-tc-lab", "kubeContext": "k3d-igw-tc-lab", "scenario": "02-trigger"}}},
	}}
	b, _ := json.Marshal(state)
	file := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c.run("stack", "import", "--file", file)
	for k, v := range map[string]string{"cluster": "existing", "renderDir": t.TempDir(), "installUpstream": "false",
		"buildImages": "false", "monitoring": "false"} {
		c.run("config", "set", "igwlab:"+k, v)
	}
	for _, op := range [][]string{{"preview"}, {"up", "--yes", "--skip-preview"}} {
		if op[0] == "up" {
			c.prebuilt() // the preview had the language host build main, as a user's does; once is enough
		}
		out, err := c.try(op...)
		if err == nil {
			t.Fatalf("pulumi %s took the k3d cluster away:\n%s", op[0], out)
		}
		for _, w := range []string{"holds the k3d cluster igw-tc-lab", "pulumi stack init gke"} {
			if !strings.Contains(out, w) {
				t.Errorf("pulumi %s: the refusal lacks %q:\n%s", op[0], w, out)
			}
		}
	}
	var after struct {
		Deployment struct {
			Resources []struct {
				Type string `json:"type"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal([]byte(c.run("stack", "export")), &after); err != nil {
		t.Fatal(err)
	}
	for _, r := range after.Deployment.Resources {
		// The stack itself, and at most the read of its own outputs (with Pulumi's built-in
		// provider, which reads it): nothing of the lab.
		if !strings.HasPrefix(r.Type, "pulumi:") {
			t.Errorf("the refused update left a %s in the state", r.Type)
		}
	}
}
