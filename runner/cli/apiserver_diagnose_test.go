package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/diagnose/kubesource"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/gateway/kubetest"
	"github.com/igwlab/igwlab/runner/kube"
)

// TestAPIServerTierDiagnose runs diagnose's Kubernetes source against a real kube-apiserver
// (no kubelet: pods are objects whose status the test sets). The pods a selector matches are
// found and the Running ones sampled (their admins reached on the emulator's pool, the one step
// that needs a kubelet); a selector matching nothing, and a port-forward to a pod whose node
// has no kubelet, are errors that say what to check, within --timeout.
func TestAPIServerTierDiagnose(t *testing.T) {
	kubeBin := os.Getenv("IGWLAB_KUBE_BIN")
	if kubeBin == "" {
		t.Skip("set IGWLAB_KUBE_BIN (make test-apiserver does)")
	}
	cp := kubetest.Start(t, kubeBin)
	ctx := context.Background()
	c, err := kube.NewClient(cp.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pool := emulatortest.Gateways(t, 3, 1, 0)

	// A node whose kubelet port nobody listens on: the API server's port-forward has nowhere to go.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kubeletPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	node, err := c.CS.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "igwlab-test-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(kubeletPort)}}}
	if _, err := c.CS.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := diagnose.LabNamespace
	if _, err := c.CS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager's service-account controller runs here: the pods' account is made by hand.
	if _, err := c.CS.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gatewayLabels := map[string]string{"istio": "ingressgateway", "app": "istio-ingressgateway"}
	create := func(name string, labels map[string]string, phase corev1.PodPhase) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{NodeName: "igwlab-test-node", Containers: []corev1.Container{{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.27.3"}}}}
		created, err := c.CS.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase == "" {
			return
		}
		created.Status.Phase = phase
		if _, err := c.CS.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admins := map[string]string{}
	var running []string
	for _, p := range pool.Pods() {
		create(p.Name, gatewayLabels, corev1.PodRunning)
		admins[p.Name] = p.AdminURL()
		running = append(running, p.Name)
	}
	slices.Sort(running)
	create("istio-ingressgateway-5d8f7c9b6d-pending", gatewayLabels, "")
	create("istio-ingressgateway-5d8f7c9b6d-failed", gatewayLabels, corev1.PodFailed)
	create("httpbin-7f4b9c6d5-x2k9q", map[string]string{"app": "httpbin"}, corev1.PodRunning)

	o := diagnose.KubeOptions{Kubeconfig: cp.Kubeconfig, Namespace: ns, Selector: diagnose.LabSelector,
		Duration: 200 * time.Millisecond, Timeout: 5 * time.Second}
	w, err := kubesource.Pods{KubeOptions: o, Find: c, Reach: urlReach(admins), Server: cp.Rest.Host}.Window(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range w.Pods {
		got = append(got, p.Name)
	}
	if !slices.Equal(got, running) {
		t.Errorf("sampled %v, want the Running gateway pods %v", got, running)
	}
	left := strings.Join(w.Missing, " ")
	for _, want := range []string{"istio-ingressgateway-5d8f7c9b6d-pending (Pending)", "istio-ingressgateway-5d8f7c9b6d-failed (Failed)"} {
		if !strings.Contains(left, want) {
			t.Errorf("the pods left out do not name %s: %v", want, w.Missing)
		}
	}

	diagnose := func(args ...string) (string, time.Duration) {
		t.Helper()
		var out, errb bytes.Buffer
		start := time.Now()
		code := Main(ctx, append([]string{"diagnose", "--kubeconfig", cp.Kubeconfig}, args...), &out, &errb)
		took := time.Since(start)
		if code != 1 {
			t.Errorf("diagnose %v: exit %d, want 1\n%s", args, code, errb.String())
		}
		return errb.String(), took
	}
	msg, _ := diagnose("--selector", "istio=nothing-here")
	for _, want := range []string{"no pod in namespace istio-ingress matches the selector istio=nothing-here",
		"kubectl --kubeconfig " + cp.Kubeconfig + " get pods -n istio-ingress -l istio=nothing-here"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a selector matching nothing: %q does not say %q", msg, want)
		}
	}
	msg, took := diagnose("--duration", "1s", "--timeout", "3s")
	for _, want := range []string{"port-forward to istio-ingress/" + running[0] + ":" + strconv.Itoa(kube.AdminPort),
		"kubectl --kubeconfig " + cp.Kubeconfig + " port-forward -n istio-ingress pod/" + running[0] + " 15000"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a pod without a kubelet: %q does not say %q", msg, want)
		}
	}
	// Each step is bounded by --timeout: finding the pods, then the port-forwards opened at once.
	if took > 2*3*time.Second+time.Second {
		t.Errorf("a pod without a kubelet: diagnose took %s with --timeout 3s", took)
	}
	t.Logf("%s(in %s)", msg, took.Round(time.Millisecond))

	// A kubelet that accepts and never answers: the port-forward gives up at --timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	if node, err = c.CS.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(silent.Addr().(*net.TCPAddr).Port)
	if _, err := c.CS.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	msg, took = diagnose("--duration", "1s", "--timeout", "2s")
	if !strings.Contains(msg, "port-forward to istio-ingress/") || took > 2*2*time.Second+time.Second {
		t.Errorf("a kubelet that never answers: %q after %s with --timeout 2s", msg, took)
	}
	t.Logf("%s(in %s)", msg, took.Round(time.Millisecond))
}

// urlReach reaches pods at admin base URLs by name, in place of a port-forward.
type urlReach map[string]string

func (u urlReach) Get(ctx context.Context, _, pod string, _ int, path string) ([]byte, error) {
	return diagnose.AdminSource{}.Get(ctx, u[pod], path)
}
