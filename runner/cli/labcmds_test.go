package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// fakeStackOpen makes the commands open st instead of a Pulumi stack, for one test.
func fakeStackOpen(t *testing.T, st pulumistack.Stack) *int {
	t.Helper()
	opened := new(int)
	prev := pulumistack.Opener
	pulumistack.Opener = func(context.Context, pulumistack.Options) (pulumistack.Stack, error) {
		*opened++
		if st == nil {
			return nil, errors.New("no stack in this test")
		}
		return st, nil
	}
	t.Cleanup(func() { pulumistack.Opener = prev })
	// A fake stack is no machine to check: up's doctor passes (TestUpRunsTheDoctorFirst fails it).
	prevPreflight := preflight
	preflight = func(context.Context, pulumistack.Stack) error { return nil }
	t.Cleanup(func() { preflight = prevPreflight })
	return opened
}

// up runs the doctor before it writes or applies anything, and stops on what it finds.
func TestUpRunsTheDoctorFirst(t *testing.T) {
	st := &gatewaytest.Stack{KubeRef: gatewaytest.NewKube(1, 1), Config: map[string]string{"igwlab:scenario": "02-trigger"}}
	fakeStackOpen(t, st)
	preflight = func(context.Context, pulumistack.Stack) error {
		return errors.New("the machine is not ready for the real lab (igwlab doctor):\n  cpu: 2 CPUs (fix: give the Docker VM at least 4 CPUs)")
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"up", "--scenario", "04-mrpc"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "at least 4 CPUs") || len(st.Ups) != 0 || st.Config["igwlab:scenario"] != "02-trigger" {
		t.Errorf("stderr %q, ups %v, config %v: up must stop before it writes or applies", errb.String(), st.Ups, st.Config)
	}
}

// TestLabCommandsFailFastWhileTheStackIsHeld: while a suite holds the stack (its lock, taken
// here on a descriptor of its own, which flock treats exactly as another process's; the
// cross-process case is runner/pulumistack's test), preview, up and another suite fail at once,
// naming the holder, and never open the stack.
func TestLabCommandsFailFastWhileTheStackIsHeld(t *testing.T) {
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const name = "igwlab-lock-test"
	release, err := pulumistack.Lock(root, name, "suite --target k3d")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	opened := fakeStackOpen(t, nil)
	for _, args := range [][]string{{"preview", "--scenario", "04-mrpc"}, {"up", "--scenario", "04-mrpc"}, {"suite", "--target", "k3d"}} {
		var out, errb bytes.Buffer
		start := time.Now()
		code := Main(context.Background(), append(args, "--stack", name), &out, &errb)
		if code != 1 || time.Since(start) > 10*time.Second {
			t.Errorf("%v: exit %d after %s, want 1 at once", args, code, time.Since(start))
		}
		for _, want := range []string{"stack " + name, fmt.Sprintf("pid %d", os.Getpid()), "igwlab suite --target k3d", "wait for it to finish"} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("%v: %q lacks %q", args, errb.String(), want)
			}
		}
	}
	if *opened != 0 {
		t.Errorf("the stack was opened %d times while held", *opened)
	}
}

// TestPreviewHandsTheSwitchToThePreviewOnly: igwlab preview passes the scenario and the knob
// overrides to the stack's preview and writes nothing to the stack's config; igwlab up writes
// them, then applies.
func TestPreviewHandsTheSwitchToThePreviewOnly(t *testing.T) {
	st := &gatewaytest.Stack{KubeRef: gatewaytest.NewKube(1, 1), Config: map[string]string{"igwlab:scenario": "02-trigger"}}
	fakeStackOpen(t, st)
	var out, errb bytes.Buffer
	args := []string{"preview", "--scenario", "04-mrpc", "--set", "hcm.http2_protocol_options.max_concurrent_streams=100", "--stack", "igwlab-preview-test"}
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if len(st.Previews) != 1 || st.Previews[0]["igwlab:scenario"] != "04-mrpc" ||
		st.Previews[0]["igwlab:knobs"] != `{"hcm.http2_protocol_options.max_concurrent_streams":"100"}` {
		t.Errorf("previewed %v", st.Previews)
	}
	if len(st.Config) != 1 || st.Config["igwlab:scenario"] != "02-trigger" || len(st.Ups) != 0 {
		t.Errorf("a preview changed the stack: config %v, ups %v", st.Config, st.Ups)
	}
	if err := Run(context.Background(), []string{"up", "--scenario", "04-mrpc", "--stack", "igwlab-preview-test"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if st.Config["igwlab:scenario"] != "04-mrpc" || len(st.Ups) != 1 {
		t.Errorf("up: config %v, ups %v", st.Config, st.Ups)
	}
}

// TestPreviewTakesAnEnvoyFilter: igwlab preview --envoyfilter hands the stack's preview the knobs
// a real team's EnvoyFilter sets (Gardener's, as published), names what it did not apply, and
// refuses a knob given both by the file and by --set.
func TestPreviewTakesAnEnvoyFilter(t *testing.T) {
	file := testutil.RealFixture(t, "envoyfilter-gardener-istio-1.29-ingressgateway-http2-max-concurrent-streams.yaml")
	st := &gatewaytest.Stack{KubeRef: gatewaytest.NewKube(1, 1), Config: map[string]string{"igwlab:scenario": "02-trigger"}}
	fakeStackOpen(t, st)
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"preview", "--envoyfilter", file, "--stack", "igwlab-preview-test"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	want := `{"hcm.http2_protocol_options.initial_connection_window_size":"1048576","hcm.http2_protocol_options.initial_stream_window_size":"65536",` +
		`"hcm.http2_protocol_options.max_concurrent_streams":"100","listener.per_connection_buffer_limit_bytes":"32768"}`
	if len(st.Previews) != 1 || st.Previews[0]["igwlab:knobs"] != want {
		t.Errorf("previewed %v", st.Previews)
	}
	if !strings.Contains(errb.String(), "not applied: listener.socket_options") {
		t.Errorf("preview does not name what it did not apply:\n%s", errb.String())
	}
	args := []string{"preview", "--envoyfilter", file, "--set", "hcm.http2_protocol_options.max_concurrent_streams=200", "--stack", "igwlab-preview-test"}
	if code := Main(context.Background(), args, &out, &errb); code != 2 || len(st.Previews) != 1 {
		t.Errorf("a knob set twice: exit %d, previews %d", code, len(st.Previews))
	}
}

const labKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: k3d-igw-tc-lab
  cluster: {server: "https://127.0.0.1:6550", certificate-authority-data: Q0EtREFUQQ==}
users:
- name: admin@k3d-igw-tc-lab
  user: {client-certificate-data: Q0VSVA==, client-key-data: U0VDUkVULUtFWS1EQVRB}
contexts:
- name: k3d-igw-tc-lab
  context: {cluster: k3d-igw-tc-lab, user: admin@k3d-igw-tc-lab}
current-context: k3d-igw-tc-lab
`

// TestKubeconfigCommand: igwlab kubeconfig merges the lab's context into the default
// kubeconfig (keeping the others and the current context), or writes it alone with --out,
// owner-readable only, and prints where and which context, never the key.
func TestKubeconfigCommand(t *testing.T) {
	// The default kubeconfig is named by $KUBECONFIG here, never left to the home folder: a
	// mistake must not reach the machine's own ~/.kube/config.
	home := t.TempDir()
	def := filepath.Join(home, ".kube", "config")
	t.Setenv("KUBECONFIG", def+string(os.PathListSeparator)+filepath.Join(home, "other"))
	prod := "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: \"https://prod.example:443\"}\nusers:\n- name: prod\n  user: {token: t}\ncontexts:\n- name: prod\n  context: {cluster: prod, user: prod}\ncurrent-context: prod\n"
	if err := os.MkdirAll(filepath.Dir(def), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte(prod), 0o600); err != nil {
		t.Fatal(err)
	}
	st := &gatewaytest.Stack{Config: map[string]string{}, Outs: map[string]any{"kubeconfig": labKubeconfig}}
	fakeStackOpen(t, st)
	check := func(path string, wantContexts []string, current string, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if err := Run(context.Background(), append([]string{"kubeconfig"}, args...), &out, &errb); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if s := out.String() + errb.String(); strings.Contains(s, "U0VDUkVULUtFWS1EQVRB") || strings.Contains(s, "client-key") ||
			!strings.Contains(out.String(), "--context k3d-igw-tc-lab") || !strings.Contains(s, path) {
			t.Errorf("%v printed:\n%s", args, s)
		}
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range wantContexts {
			if _, ok := cfg.Contexts[c]; !ok {
				t.Errorf("%s lacks context %s", path, c)
			}
		}
		if len(cfg.Contexts) != len(wantContexts) || cfg.CurrentContext != current {
			t.Errorf("%s: contexts %v, current %s", path, cfg.Contexts, cfg.CurrentContext)
		}
		if string(cfg.AuthInfos["admin@k3d-igw-tc-lab"].ClientKeyData) != "SECRET-KEY-DATA" {
			t.Errorf("%s: the lab's user lost its key", path)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", path, fi.Mode().Perm(), err)
		}
	}
	check(def, []string{"prod", "k3d-igw-tc-lab"}, "prod")
	check(def, []string{"prod", "k3d-igw-tc-lab"}, "prod") // again: replaced, not duplicated
	out := filepath.Join(t.TempDir(), "lab.yaml")
	check(out, []string{"k3d-igw-tc-lab"}, "k3d-igw-tc-lab", "--out", out)

	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", home)
	if p, err := defaultKubeconfig(); err != nil || p != def {
		t.Errorf("without $KUBECONFIG the default is %s (%v), want %s", p, err, def)
	}

	st.Outs = map[string]any{}
	var o, e bytes.Buffer
	if err := Run(context.Background(), []string{"kubeconfig"}, &o, &e); err == nil || !strings.Contains(err.Error(), "no kubeconfig output") {
		t.Errorf("a stack without the output: %v", err)
	}
}

// TestREADMEStatesTheRealLabSuiteTime: docs/real-lab.md's time for a full real-lab suite is what
// `igwlab scenarios --target k3d` adds up from the catalog and the lab's settings in Pulumi.yaml
// (a stack with no file of its own), so neither a new scenario nor a new drain time can leave it
// stale; the 45 s comparison is checked too.
func TestREADMEStatesTheRealLabSuiteTime(t *testing.T) {
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"scenarios", "--target", "k3d", "--stack", "igwlab-docs-probe"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`total on k3d: (\S+) for (\d+) scenario runs \(drain (\S+) \(Pulumi\.yaml\)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no total (with the drain time read from Pulumi.yaml) in:\n%s", out.String())
	}
	root, _ := infra.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "docs", "real-lab.md"))
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := stacks.Builtin()
	all, _ := cat.Select(nil, nil)
	slow := suite.EstimateSuite(all, cluster.Resolve, 45*time.Second, infra.Defaults.ProxyConcurrency, 1)
	var missing []string
	for _, want := range []string{"**" + m[1] + "**", m[2] + " scenario runs", "drain of " + m[3], slow.Total.String()} {
		if !bytes.Contains(readme, []byte(want)) {
			missing = append(missing, fmt.Sprintf("%q", want))
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/real-lab.md does not say %s; igwlab scenarios --target k3d says:\n%s", strings.Join(missing, ", "), out.String())
	}
}
