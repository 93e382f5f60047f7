package infra

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
)

// fakeHost is a machine for the k3d script: a PATH holding only the fake (or real) tools the
// case wants and the few utilities the script uses, and the fakes' state.
type fakeHost struct {
	t     *testing.T
	state string
	path  string
	env   map[string]string
}

// newFakeHost puts the named fakes on PATH ("docker", "k3d"); the host's own docker and k3d
// never are.
func newFakeHost(t *testing.T, st fakeState, fakes ...string) *fakeHost {
	t.Helper()
	dir := t.TempDir()
	bin, sys := filepath.Join(dir, "bin"), filepath.Join(dir, "sys")
	for _, d := range []string{bin, sys} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fakes {
		if err := os.Symlink(self, filepath.Join(bin, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"bash", "sed", "head", "grep", "cut", "date"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found: the script needs it", tool)
		}
		if err := os.Symlink(p, filepath.Join(sys, tool)); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHost{t: t, state: filepath.Join(dir, "state.json"), path: bin + string(os.PathListSeparator) + sys}
	h.save(st)
	h.env = map[string]string{"IGWLAB_CLUSTER": "igw-tc-lab", "IGWLAB_K3S_IMAGE": "rancher/k3s:v1.33.4-k3s1",
		"IGWLAB_HOST_PORT": strconv.Itoa(testutil.FreePort(t)), "IGWLAB_API_PORT": strconv.Itoa(testutil.FreePort(t)), "IGWLAB_OWNER": "igwlab/lab"}
	return h
}

func (h *fakeHost) save(st fakeState) {
	h.t.Helper()
	if st.K3dVersion == "" {
		st.K3dVersion = "v5.8.3"
	}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(h.state, b, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) load() fakeState {
	h.t.Helper()
	var st fakeState
	b, err := os.ReadFile(h.state)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// calls is every command the fakes ran, one "tool args..." line each.
func (h *fakeHost) calls() string {
	b, _ := os.ReadFile(h.state + ".log")
	return string(b)
}

// run runs the script the way the command provider does: interpreter + action, with the
// resource's environment on top of the process's.
func (h *fakeHost) run(interpreter []string, action string, env map[string]string) (stdout, stderr string, err error) {
	h.t.Helper()
	bash, _ := exec.LookPath("bash")
	cmd := exec.Command(bash, append(append([]string{}, interpreter[1:]...), action)...)
	cmd.Env = []string{"PATH=" + h.path, "HOME=" + h.t.TempDir(), fakeToolsEnv + "=" + h.state}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// script runs the embedded script with the host's environment plus extra variables.
func (h *fakeHost) script(action string, extra ...string) (string, string, error) {
	h.t.Helper()
	interp, _ := k3dScript(&ClusterArgs{})
	env := map[string]string{}
	for k, v := range h.env {
		env[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return h.run(interp, action, env)
}

func mustFail(t *testing.T, what string, stderr string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want a refusal", what)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: the message lacks %q:\n%s", what, w, stderr)
		}
	}
}

func TestK3dScriptCreatesThenAdoptsItsOwnCluster(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	if _, stderr, err := h.script("preflight"); err != nil {
		t.Fatalf("preflight on a clean machine: %v\n%s", err, stderr)
	}
	if strings.Contains(h.calls(), "k3d cluster create") {
		t.Fatal("preflight created a cluster")
	}
	out, stderr, err := h.script("ensure")
	if err != nil {
		t.Fatalf("ensure: %v\n%s", err, stderr)
	}
	id := strings.TrimSpace(out)
	if id == "" || strings.Contains(id, "\n") || strings.Contains(out, "INFO") {
		t.Fatalf("ensure's stdout must be the instance id alone (k3d's progress goes to stderr), got %q", out)
	}
	create := ""
	for _, l := range strings.Split(h.calls(), "\n") {
		if strings.HasPrefix(l, "k3d cluster create") {
			create = l
		}
	}
	for _, want := range []string{"k3d cluster create igw-tc-lab ", "--image rancher/k3s:v1.33.4-k3s1",
		"--api-port 127.0.0.1:" + h.env["IGWLAB_API_PORT"], "-p 127.0.0.1:" + h.env["IGWLAB_HOST_PORT"] + ":80@loadbalancer",
		"--runtime-label igwlab.owner=igwlab/lab@server:*", "--runtime-label igwlab.instance=" + id + "@server:*",
		"--kubeconfig-update-default=false", "--disable=traefik@server:*"} {
		if !strings.Contains(create, want) {
			t.Errorf("k3d was called without %q:\n%s", want, create)
		}
	}
	// A second run (a re-run of pulumi up, or a new state) adopts it and reports the same id.
	out, stderr, err = h.script("ensure")
	if err != nil || strings.TrimSpace(out) != id {
		t.Fatalf("re-run: %v, id %q (want %q)\n%s", err, out, id, stderr)
	}
	if n := strings.Count(h.calls(), "k3d cluster create"); n != 1 {
		t.Errorf("k3d cluster create ran %d times", n)
	}
	if _, stderr, err := h.script("preflight"); err != nil {
		t.Errorf("preflight with the stack's own cluster up: %v\n%s", err, stderr)
	}
}

func TestK3dScriptRefusesAForeignCluster(t *testing.T) {
	for _, owner := range []string{"", "igwlab/other"} {
		labels := map[string]string{"k3d.cluster": "igw-tc-lab", "k3d.role": "server"}
		want := "was not created by this stack (igwlab/lab)"
		if owner != "" {
			labels["igwlab.owner"] = owner
			want = "belongs to another stack (igwlab/other)"
		}
		h := newFakeHost(t, fakeState{Containers: []fakeContainer{{Names: "k3d-igw-tc-lab-server-0", Labels: labels}}}, "docker", "k3d")
		for _, action := range []string{"preflight", "ensure"} {
			_, stderr, err := h.script(action)
			mustFail(t, action+" with a foreign cluster", stderr, err, "a k3d cluster named igw-tc-lab already exists", want,
				"k3d cluster delete igw-tc-lab", "pulumi config set igwlab:clusterName <name> -s lab")
		}
		if c := h.calls(); strings.Contains(c, "cluster create") || strings.Contains(c, "cluster delete") {
			t.Errorf("a refused run still changed clusters:\n%s", c)
		}
	}
}

func TestK3dScriptRefusesBusyPorts(t *testing.T) {
	// A process listening on the host port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	busy := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_, stderr, err := h.script("preflight", "IGWLAB_HOST_PORT", busy)
	mustFail(t, "host port taken", stderr, err, "port "+busy+" (igwlab:hostPort) is in use by a process listening on 127.0.0.1:"+busy,
		"pulumi config set igwlab:hostPort <port> -s lab")

	// Another k3d cluster publishing the API port (a common clash: both default to 6550).
	api := h.env["IGWLAB_API_PORT"]
	h.save(fakeState{Containers: []fakeContainer{{Names: "k3d-other-serverlb", Ports: "80/tcp, 127.0.0.1:" + api + "->6443/tcp",
		Labels: map[string]string{"k3d.cluster": "other", "k3d.role": "loadbalancer"}}}})
	_, stderr, err = h.script("ensure")
	mustFail(t, "API port taken", stderr, err, "port "+api+" (igwlab:apiPort) is in use by container k3d-other-serverlb",
		"k3d cluster stop <name>", "pulumi config set igwlab:apiPort <port> -s lab")
	if strings.Contains(h.calls(), "cluster create") {
		t.Error("created a cluster on a busy port")
	}
}

func TestK3dScriptChecksTools(t *testing.T) {
	cases := []struct {
		name  string
		st    fakeState
		fakes []string
		want  []string
	}{
		{"k3d too old", fakeState{K3dVersion: "v5.7.5"}, []string{"docker", "k3d"}, []string{"k3d v5.7.5 is too old: k3d 5.8.0 or later is needed"}},
		{"k3d missing", fakeState{}, []string{"docker"}, []string{"k3d not found on PATH: install k3d 5.8.0 or later"}},
		{"docker not running", fakeState{DockerDown: true}, []string{"docker", "k3d"}, []string{"Docker is not running", "Cannot connect to the Docker daemon", "start Docker"}},
		{"docker missing", fakeState{}, []string{"k3d"}, []string{"docker not found on PATH"}},
	}
	for _, c := range cases {
		h := newFakeHost(t, c.st, c.fakes...)
		for _, action := range []string{"preflight", "ensure"} {
			_, stderr, err := h.script(action)
			mustFail(t, c.name+": "+action, stderr, err, c.want...)
		}
	}
	// The same with the real docker CLI, where it is installed, and no daemon behind it.
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Log("no docker CLI here: the daemon-down case ran with the fake only")
		return
	}
	h := newFakeHost(t, fakeState{}, "k3d")
	if err := os.Symlink(real, filepath.Join(strings.Split(h.path, string(os.PathListSeparator))[0], "docker")); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := h.script("preflight", "DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	mustFail(t, "real docker CLI, no daemon", stderr, err, "Docker is not running", "start Docker")
}

func TestK3dScriptRefusesChangesToARunningCluster(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	if _, stderr, err := h.script("ensure"); err != nil {
		t.Fatalf("ensure: %v\n%s", err, stderr)
	}
	cases := []struct{ key, env, value, old string }{
		{"k3sImage", "IGWLAB_K3S_IMAGE", "rancher/k3s:v1.32.5-k3s1", h.env["IGWLAB_K3S_IMAGE"]},
		{"hostPort", "IGWLAB_HOST_PORT", strconv.Itoa(testutil.FreePort(t)), h.env["IGWLAB_HOST_PORT"]},
		{"apiPort", "IGWLAB_API_PORT", strconv.Itoa(testutil.FreePort(t)), h.env["IGWLAB_API_PORT"]},
		{"clusterName", "IGWLAB_CLUSTER", "igw-tc-lab-2", "igw-tc-lab"},
	}
	for _, c := range cases {
		for _, action := range []string{"preflight", "ensure"} {
			_, stderr, err := h.script(action, c.env, c.value)
			mustFail(t, c.key+" changed: "+action, stderr, err,
				"igwlab:"+c.key+" changed from "+c.old+" to "+c.value,
				"pulumi config set igwlab:"+c.key+" "+c.old+" -s lab", "pulumi destroy -s lab, then pulumi up -s lab")
		}
	}
	if c := h.calls(); strings.Count(c, "cluster create") != 1 || strings.Contains(c, "cluster delete") {
		t.Errorf("a refused change touched the cluster:\n%s", c)
	}
}

func TestK3dScriptDeletesOnlyItsOwnInstance(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	out, stderr, err := h.script("ensure")
	if err != nil {
		t.Fatalf("ensure: %v\n%s", err, stderr)
	}
	id := strings.TrimSpace(out)
	// A stale resource (its cluster was since deleted and made again) must not delete the new one.
	_, stderr, err = h.script("delete", "PULUMI_COMMAND_STDOUT", "20200101000000-1-1")
	if err != nil || !strings.Contains(stderr, "not deleting k3d cluster igw-tc-lab") || strings.Contains(h.calls(), "cluster delete") {
		t.Fatalf("delete with another instance id: %v\n%s\n%s", err, stderr, h.calls())
	}
	if _, stderr, err = h.script("delete", "PULUMI_COMMAND_STDOUT", id); err != nil {
		t.Fatalf("delete: %v\n%s", err, stderr)
	}
	if !strings.Contains(h.calls(), "k3d cluster delete igw-tc-lab") || len(h.load().Containers) != 0 {
		t.Errorf("the stack's own cluster was not deleted:\n%s", h.calls())
	}
	if _, stderr, err = h.script("delete", "PULUMI_COMMAND_STDOUT", id); err != nil || !strings.Contains(stderr, "already gone") {
		t.Errorf("deleting a cluster that is gone: %v\n%s", err, stderr)
	}
}

// TestK3dScriptStartsAStoppedLab: a stopped lab (docker ps -a lists it, but its API port
// refuses every connection) is started, not adopted as it is: the preflight says so, and
// ensure runs k3d cluster start and keeps the cluster's instance id.
func TestK3dScriptStartsAStoppedLab(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	out, stderr, err := h.script("ensure")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	id := strings.TrimSpace(out)
	st := h.load()
	for i := range st.Containers {
		st.Containers[i].Stopped = true
	}
	h.save(st)
	if _, stderr, err := h.script("preflight"); err != nil || !strings.Contains(stderr, "k3d cluster igw-tc-lab is stopped: this update starts it") {
		t.Errorf("preflight on a stopped lab: %v\n%s", err, stderr)
	}
	out, stderr, err = h.script("ensure")
	if err != nil || strings.TrimSpace(out) != id {
		t.Fatalf("ensure on a stopped lab: %v, id %q (want %q)\n%s", err, out, id, stderr)
	}
	if !strings.Contains(h.calls(), "k3d cluster start igw-tc-lab") {
		t.Errorf("the stopped lab was adopted without being started:\n%s", h.calls())
	}
	for _, c := range h.load().Containers {
		if c.Stopped {
			t.Errorf("%s still stopped", c.Names)
		}
	}
}

// TestK3dScriptChecksTheMachine: the preflight holds the Docker VM to what the program says the
// lab requests, counting what a node reports for scheduling and the VM's real cores for the
// warning that spread scenarios will be bound by the machine; and to BuildKit when the program
// builds the lab's image.
func TestK3dScriptChecksTheMachine(t *testing.T) {
	nodeCPUs, total := Defaults.K3dNeeds()
	sizing := []string{"IGWLAB_NEED_NODE_CPUS", strconv.FormatInt(nodeCPUs, 10), "IGWLAB_REQUEST_MILLICPU", strconv.FormatInt(total.CPUMilli, 10),
		"IGWLAB_REQUEST_MEMORY", strconv.FormatInt(total.MemBytes, 10)}
	real := int(total.CPUMilli+999) / 1000
	for _, tc := range []struct {
		name   string
		st     fakeState
		extra  []string
		fail   []string // the refusal's words; none: it passes
		warned bool     // the host-bound warning
	}{
		{"colima's default VM", fakeState{NCPU: 2, MemTotal: 2 << 30}, nil,
			[]string{"the Docker VM has 2, which each of k3d's 3 nodes reports as its own", fmt.Sprintf("at least %d CPUs", nodeCPUs), "colima start --cpu", "igwlab:profile small"}, false},
		{"CPUs enough, memory short", fakeState{NCPU: 8, MemTotal: 4 << 30}, nil,
			[]string{"of memory and the Docker VM has 4.0 GiB", "colima start --memory"}, false},
		{"scheduled on shared cores", fakeState{NCPU: int(nodeCPUs), MemTotal: 16 << 30}, nil, nil, true},
		{"a VM of its own", fakeState{NCPU: real, MemTotal: 16 << 30}, nil, nil, false},
		{"Docker 28 without buildx", fakeState{NoBuildx: true}, []string{"IGWLAB_BUILD_IMAGES", "1"},
			[]string{"buildx plugin", "docker-buildx-plugin", "igwlab:h2dialImage"}, false},
		{"Docker 20.10 without buildx: BuildKit in the daemon", fakeState{NoBuildx: true, ServerVersion: "20.10.24"}, []string{"IGWLAB_BUILD_IMAGES", "1"}, nil, false},
	} {
		h := newFakeHost(t, tc.st, "docker", "k3d")
		_, stderr, err := h.script("preflight", append(append([]string{}, sizing...), tc.extra...)...)
		if tc.fail != nil {
			mustFail(t, tc.name, stderr, err, tc.fail...)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, stderr)
		}
		if got := strings.Contains(stderr, "share"); got != tc.warned {
			t.Errorf("%s: host-bound warning %v, want %v:\n%s", tc.name, got, tc.warned, stderr)
		}
	}
}
