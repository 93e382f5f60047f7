package kubesource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/emulator/emulatortest"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/load"
)

// listed is a Finder with a fixed answer.
type listed struct {
	pods []corev1.Pod
	err  error
}

func (l listed) List(context.Context, string, string) ([]corev1.Pod, error) { return l.pods, l.err }

// hanging is a Finder whose API server never answers.
type hanging struct{}

func (hanging) List(ctx context.Context, _, _ string) ([]corev1.Pod, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// emulatorAdmins reaches the emulator's pods by name, as a port-forward reaches a gateway pod.
type emulatorAdmins map[string]string

func (e emulatorAdmins) Get(ctx context.Context, ns, pod string, port int, path string) ([]byte, error) {
	base, ok := e[pod]
	if !ok || port != kube.AdminPort || ns != diagnose.LabNamespace {
		return nil, fmt.Errorf("no pod %s/%s:%d", ns, pod, port)
	}
	return diagnose.AdminSource{}.Get(ctx, base, path)
}

// refusing is a Reacher whose port-forwards fail.
type refusing struct{}

func (refusing) Get(_ context.Context, ns, pod string, port int, _ string) ([]byte, error) {
	return nil, fmt.Errorf("port-forward to %s/%s:%d: error upgrading connection", ns, pod, port)
}

func pod(name string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: diagnose.LabNamespace,
		Labels: map[string]string{"istio": "ingressgateway"}}, Status: corev1.PodStatus{Phase: phase}}
}

func options() diagnose.KubeOptions {
	return diagnose.KubeOptions{Namespace: diagnose.LabNamespace, Selector: diagnose.LabSelector,
		Duration: 10 * time.Millisecond, Timeout: 300 * time.Millisecond}
}

// TestFindingPodsSaysWhatToCheck: each way the "find pods" step or the "reach admin" step can
// fail is an error that names the namespace, the selector and the kubectl line to check, in
// time.
func TestFindingPodsSaysWhatToCheck(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("user cannot list pods"))
	check := "`kubectl --context lab get pods -n istio-ingress -l istio=ingressgateway`"
	for _, c := range []struct {
		name  string
		find  Finder
		reach Reacher
		want  []string
	}{
		{"no pod matches", listed{}, nil, []string{"no pod in namespace istio-ingress matches the selector istio=ingressgateway", check}},
		{"none Running", listed{pods: []corev1.Pod{pod("gw-a", corev1.PodPending), pod("gw-b", corev1.PodFailed)}}, nil,
			[]string{"none of the 2 pod(s)", "gw-a (Pending)", "gw-b (Failed)", "kubectl --context lab describe pods -n istio-ingress -l istio=ingressgateway"}},
		{"not allowed", listed{err: forbidden}, nil, []string{"would not list the pods in istio-ingress", "cannot list pods", check}},
		{"unreachable", listed{err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}, nil, []string{"cannot reach the API server https://apiserver", "connection refused", check}},
		{"never answers", hanging{}, nil, []string{"no answer from the API server https://apiserver within 300ms", check}},
		{"no port-forward", listed{pods: []corev1.Pod{pod("gw-a", corev1.PodRunning)}}, refusing{},
			[]string{"gw-a", "error upgrading connection", "kubectl --context lab port-forward -n istio-ingress pod/gw-a 15000"}},
	} {
		o := options()
		o.Context = "lab"
		saysInTime(t, c.name, func() error {
			_, err := Pods{KubeOptions: o, Find: c.find, Reach: c.reach, Server: "https://apiserver"}.Window(context.Background())
			return err
		}, c.want...)
	}
	// A gateway that is not Istio's has its admin elsewhere: --admin-port reaches it there.
	o := options()
	o.Context, o.AdminPort = "lab", 19000
	saysInTime(t, "admin port", func() error {
		_, err := Pods{KubeOptions: o, Find: listed{pods: []corev1.Pod{pod("gw-a", corev1.PodRunning)}}, Reach: refusing{}, Server: "https://apiserver"}.Window(context.Background())
		return err
	}, "port-forward to istio-ingress/gw-a:19000", "kubectl --context lab port-forward -n istio-ingress pod/gw-a 19000")
}

// saysInTime runs a window that must fail within a few seconds, with an error saying each of want.
func saysInTime(t *testing.T, name string, window func() error, want ...string) {
	t.Helper()
	start := time.Now()
	err := window()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: took %s", name, d)
	}
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", name, err, w)
		}
	}
}

// TestKubeconfigErrors: a context the kubeconfig lacks, and an API server nobody listens on,
// are errors that say what to check, in time.
func TestKubeconfigErrors(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)) // nothing listens there while the test runs
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: lab, context: {cluster: c, user: u}}]
current-context: lab
`, closed)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		context string
		want    []string
	}{
		{"nope", []string{`"nope"`, "kubectl config get-contexts --kubeconfig " + path}},
		{"lab", []string{"cannot reach the API server https://" + closed, "kubectl --kubeconfig " + path + " --context lab get pods -n istio-ingress"}},
	} {
		o := options()
		o.Kubeconfig, o.Context = path, c.context
		saysInTime(t, "--context "+c.context, func() error {
			_, err := Kube{o}.Window(context.Background())
			return err
		}, c.want...)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		change func(*diagnose.KubeOptions)
		want   string
	}{
		{func(o *diagnose.KubeOptions) { o.Namespace = "" }, "--namespace"},
		{func(o *diagnose.KubeOptions) { o.Selector = "" }, "--selector"},
		{func(o *diagnose.KubeOptions) { o.Selector = "istio in (" }, "--selector"},
		{func(o *diagnose.KubeOptions) { o.Timeout = 0 }, "--timeout"},
	} {
		o := options()
		c.change(&o)
		if err := Check(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, c.want)
		}
	}
	if err := Check(options()); err != nil {
		t.Errorf("the lab's gateway: %v", err)
	}
}

// TestSamplesLikeTheAdminSource: on a pool carrying one shared connection, the Kubernetes
// source's sampling (its pods found, their admins reached by name) and the admin source read
// at the same time get the same verdict and hot pod from the same judge; a pod that is not
// Running is left out and named.
func TestSamplesLikeTheAdminSource(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load for a few seconds")
	}
	p := emulatortest.Gateways(t, 4, 1, 0)
	admins := emulatorAdmins{}
	var urls []string
	pods := []corev1.Pod{pod("istio-ingressgateway-evicted", corev1.PodFailed)}
	for _, ep := range p.Pods() {
		admins[ep.Name] = ep.AdminURL()
		urls = append(urls, ep.AdminURL())
		pods = append(pods, pod(ep.Name, corev1.PodRunning))
	}
	done := make(chan error, 1)
	go func() {
		_, err := load.Run(context.Background(), load.Spec{Kind: "h2dial", Mode: "shared", Concurrency: 20, Path: "/get",
			Target: p.VIP(), Duration: 4 * time.Second})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	o := options()
	o.Duration, o.Timeout = 2*time.Second, 5*time.Second
	type result struct {
		w   *diagnose.Window
		err error
	}
	viaKube, viaAdmin := make(chan result, 1), make(chan result, 1)
	go func() {
		w, err := Pods{KubeOptions: o, Find: listed{pods: pods}, Reach: admins}.Window(context.Background())
		viaKube <- result{w, err}
	}()
	go func() {
		w, err := diagnose.AdminSource{URLs: urls, Duration: o.Duration}.Window(context.Background())
		viaAdmin <- result{w, err}
	}()
	k, a := <-viaKube, <-viaAdmin
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if k.err != nil || a.err != nil {
		t.Fatalf("kube: %v; admin: %v", k.err, a.err)
	}
	rk, ra := diagnose.Judge(k.w), diagnose.Judge(a.w)
	if rk.Verdict != diagnose.FewConnections || rk.Verdict != ra.Verdict || rk.HotPod != ra.HotPod {
		t.Errorf("through Kubernetes: %s (hot %s); through the admins: %s (hot %s)", rk.Verdict, rk.HotPod, ra.Verdict, ra.HotPod)
	}
	if len(k.w.Pods) != len(p.Pods()) || k.w.InForce == nil || k.w.InForce.Pods != len(p.Pods()) {
		t.Errorf("read %d pods, config_dump %+v; want all %d", len(k.w.Pods), k.w.InForce, len(p.Pods()))
	}
	if !strings.Contains(strings.Join(k.w.Missing, " "), "istio-ingressgateway-evicted (Failed)") {
		t.Errorf("the pod not Running is not named: %v", k.w.Missing)
	}
}
