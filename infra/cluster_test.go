package infra

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// registered is a command as the program registered it: what the command provider would run.
type registered struct {
	interpreter []string
	env         map[string]string
	inputs      resource.PropertyMap
}

func commandOf(t *testing.T, props resource.PropertyMap) registered {
	t.Helper()
	r := registered{env: map[string]string{}, inputs: props}
	for _, v := range props["interpreter"].ArrayValue() {
		r.interpreter = append(r.interpreter, v.StringValue())
	}
	for k, v := range props["environment"].ObjectValue() {
		r.env[string(k)] = v.StringValue()
	}
	if len(r.interpreter) < 3 || r.interpreter[0] != "bash" {
		t.Fatalf("interpreter %v: want bash -c SCRIPT NAME", r.interpreter)
	}
	return r
}

// preflight finds the program's check invoke.
func (m *recorder) preflight(t *testing.T) registered {
	t.Helper()
	for _, c := range m.calls {
		if c.Token == "command:local:run" && c.Args["command"].StringValue() == "preflight" {
			return commandOf(t, c.Args)
		}
	}
	t.Fatal("the program runs no preflight check")
	return registered{}
}

// TestClusterChangeIsRefusedNotReplaced: the k3d cluster command has no triggers, so a changed
// k3s image or port is an update (never Pulumi's create-before-delete replace, whose delete
// would remove the new cluster), and the program's own commands, run on a fake machine
// exactly as registered, refuse the change at preview (the preflight invoke) and at up.
func TestClusterChangeIsRefusedNotReplaced(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	ports := func(c *Config) {
		c.HostPort, c.APIPort = atoi(h.env["IGWLAB_HOST_PORT"]), atoi(h.env["IGWLAB_API_PORT"])
	}
	m := run(t, ports)
	res := m.find("command:local:Command", "k3d-cluster")
	if res == nil {
		t.Fatal("no k3d-cluster command")
	}
	if _, ok := res.Inputs["triggers"]; ok {
		t.Errorf("the cluster command has triggers %v: a change would replace (and so delete) the cluster", res.Inputs["triggers"])
	}
	if res.RegisterRPC.GetDeleteBeforeReplace() {
		t.Error("the cluster command is delete-before-replace")
	}
	for k, want := range map[string]string{"create": "ensure", "update": "ensure", "delete": "delete"} {
		if got := res.Inputs[resource.PropertyKey(k)]; !got.IsString() || got.StringValue() != want {
			t.Errorf("%s = %v, want %q", k, got, want)
		}
	}
	cmd := commandOf(t, res.Inputs)
	pre := m.preflight(t)
	if strings.Join(pre.interpreter, "\x00") != strings.Join(cmd.interpreter, "\x00") {
		t.Errorf("the preflight and the cluster command run different scripts")
	}
	// The preflight gets the command's environment and what the lab asks of the machine; the
	// command gets no sizing, so that a change of the lab's size is no update of the cluster.
	nodeCPUs, total := Defaults.K3dNeeds()
	sizing := map[string]string{"IGWLAB_NEED_NODE_CPUS": strconv.FormatInt(nodeCPUs, 10),
		"IGWLAB_REQUEST_MILLICPU": strconv.FormatInt(total.CPUMilli, 10), "IGWLAB_REQUEST_MEMORY": strconv.FormatInt(total.MemBytes, 10), "IGWLAB_BUILD_IMAGES": "1"}
	for k, v := range cmd.env {
		if pre.env[k] != v {
			t.Errorf("the preflight's %s = %q, the cluster command's %q", k, pre.env[k], v)
		}
	}
	for k, v := range sizing {
		if pre.env[k] != v || cmd.env[k] != "" {
			t.Errorf("%s: preflight %q (want %q), cluster command %q (want none)", k, pre.env[k], v, cmd.env[k])
		}
	}
	for k, v := range map[string]string{"IGWLAB_CLUSTER": "igw-tc-lab", "IGWLAB_K3S_IMAGE": Defaults.K3sImage, "IGWLAB_OWNER": "igwlab/lab"} {
		if cmd.env[k] != v || pre.env[k] != v {
			t.Errorf("%s = %q (preflight %q), want %q", k, cmd.env[k], pre.env[k], v)
		}
	}

	// Up on a clean machine: the preflight passes, create makes the cluster.
	if _, stderr, err := h.run(pre.interpreter, "preflight", pre.env); err != nil {
		t.Fatalf("preflight: %v\n%s", err, stderr)
	}
	if _, stderr, err := h.run(cmd.interpreter, "ensure", cmd.env); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	// The k3s image changed in the stack's config: preview and up refuse, naming both values.
	m2 := run(t, func(c *Config) { ports(c); c.K3sImage = "rancher/k3s:v1.32.5-k3s1" })
	changed := commandOf(t, m2.find("command:local:Command", "k3d-cluster").Inputs)
	for _, r := range []registered{m2.preflight(t), changed} {
		action := r.inputs["command"]
		if !action.IsString() {
			action = r.inputs["update"]
		}
		_, stderr, err := h.run(r.interpreter, action.StringValue(), r.env)
		mustFail(t, "k3sImage changed: "+action.StringValue(), stderr, err,
			"igwlab:k3sImage changed from "+Defaults.K3sImage+" to rancher/k3s:v1.32.5-k3s1", "pulumi destroy -s lab")
	}
	if strings.Count(h.calls(), "cluster create") != 1 || strings.Contains(h.calls(), "cluster delete") {
		t.Errorf("the refused change touched the cluster:\n%s", h.calls())
	}
}

// TestClusterPublishesOnLoopbackOnly: the k3d cluster publishes the Kubernetes API and the
// gateway's port 80 on 127.0.0.1 only, and no Envoy admin or stats port (15000, 15090) at all:
// the runner reaches those through the Kubernetes API, never through a published port. Read
// from the arguments k3d gets when the registered command runs.
func TestClusterPublishesOnLoopbackOnly(t *testing.T) {
	h := newFakeHost(t, fakeState{}, "docker", "k3d")
	m := run(t, func(c *Config) {
		c.HostPort, c.APIPort = atoi(h.env["IGWLAB_HOST_PORT"]), atoi(h.env["IGWLAB_API_PORT"])
	})
	cmd := commandOf(t, m.find("command:local:Command", "k3d-cluster").Inputs)
	if _, stderr, err := h.run(cmd.interpreter, "ensure", cmd.env); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	var published []string
	for _, c := range h.load().Containers {
		if c.Ports != "" {
			published = append(published, strings.Split(c.Ports, ", ")...)
		}
	}
	if len(published) != 2 {
		t.Errorf("published ports %v: want the API and the gateway's 80", published)
	}
	for _, p := range published {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port mapping %q is published beyond loopback", p)
		}
		if strings.Contains(p, "->15000/") || strings.Contains(p, "->15090/") {
			t.Errorf("port mapping %q publishes an Envoy admin port", p)
		}
	}
}

// TestKubeconfigIsNeverLogged: the command that prints the admin kubeconfig does not log its
// output (the provider logs both streams by default), and its output is a secret.
func TestKubeconfigIsNeverLogged(t *testing.T) {
	m := run(t, nil)
	kc := m.find("command:local:Command", "k3d-kubeconfig")
	if kc == nil {
		t.Fatal("no k3d-kubeconfig command")
	}
	if l := kc.Inputs["logging"]; !l.IsString() || l.StringValue() != "none" {
		t.Errorf("logging = %v, want none", l)
	}
	if !contains(kc.RegisterRPC.GetAdditionalSecretOutputs(), "stdout") {
		t.Error("the kubeconfig command's output is not secret")
	}
	if !dependsOnName(kc, "k3d-cluster") {
		t.Error("the kubeconfig is read before the cluster exists")
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
