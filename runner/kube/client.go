// Package kube is igwlab's Kubernetes client over client-go: pods by selector, an HTTP GET on
// a pod's port through a port-forward kept open per pod, a command run in a pod, and a Job's
// output. The cluster target and diagnose's Kubernetes source both reach gateway pods through
// it; the local lab's igwlab binary does not link it.
package kube

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

// Client reaches a cluster through client-go.
type Client struct {
	CS   kubernetes.Interface
	Rest *rest.Config
	// Timeout bounds one GET through a port-forward (DefaultTimeout when zero); the caller's
	// context bounds it too.
	Timeout time.Duration
	// ForwardTimeout bounds opening a port-forward (DefaultForwardTimeout when zero).
	ForwardTimeout time.Duration

	mu       sync.Mutex
	forwards map[string]*forward // namespace/pod:port
}

type forward struct {
	stop  chan struct{}
	local uint16
}

// AdminPort is Envoy's admin port inside Istio's proxies (localhost only; reached by port-forward).
const AdminPort = 15000

// The bounds a Client takes when its own are zero.
const (
	DefaultTimeout        = 5 * time.Second
	DefaultForwardTimeout = 15 * time.Second
)

// Config loads a kubeconfig (path, or the default rules when empty) and context: a context
// the kubeconfig does not have is an error here, not a fallback to the current one.
func Config(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// NewClient loads a kubeconfig (path, or the default rules when empty) and context.
func NewClient(kubeconfig, context string) (*Client, error) {
	cfg, err := Config(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	return NewClientFromConfig(cfg)
}

// NewClientFromConfig uses a REST config.
func NewClientFromConfig(cfg *rest.Config) (*Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{CS: cs, Rest: cfg, forwards: map[string]*forward{}}, nil
}

// List lists the pods a selector matches in a namespace, whatever their phase.
func (k *Client) List(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := k.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s in %s: %w", selector, ns, err)
	}
	return list.Items, nil
}

// Delete deletes a pod with a grace period in seconds (0: at once).
func (k *Client) Delete(ctx context.Context, ns, pod string, graceSeconds int64) error {
	if err := k.CS.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &graceSeconds}); err != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", ns, pod, err)
	}
	return nil
}

// Pods lists pods that are running and ready.
func (k *Client) Pods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	pods, err := k.List(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	return ReadyPods(pods), nil
}

// ReadyPods keeps the pods that are running, ready and not being deleted.
func ReadyPods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if Ready(p) {
			out = append(out, p)
		}
	}
	return out
}

// Ready reports whether a pod is running, ready and not being deleted: in its Services'
// endpoints.
func Ready(p corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Get performs GET path on a pod's port through a port-forward kept open per pod. A broken
// forward is dropped and reopened on the next call.
func (k *Client) Get(ctx context.Context, ns, pod string, port int, path string) ([]byte, error) {
	local, err := k.forward(ctx, ns, pod, port)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(k.Timeout, DefaultTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", local, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		k.drop(ns, pod, port)
		return nil, fmt.Errorf("pod %s/%s :%d%s: %w", ns, pod, port, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		k.drop(ns, pod, port)
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pod %s/%s :%d%s: HTTP %d", ns, pod, port, path, resp.StatusCode)
	}
	return b, nil
}

// forward opens a port-forward to a pod's port, or returns the one open; opening it is
// bounded by ForwardTimeout and by ctx.
func (k *Client) forward(ctx context.Context, ns, pod string, port int) (uint16, error) {
	key := fmt.Sprintf("%s/%s:%d", ns, pod, port)
	k.mu.Lock()
	defer k.mu.Unlock()
	if f := k.forwards[key]; f != nil {
		return f.local, nil
	}
	if err := ctx.Err(); err != nil { // its time ran out while another forward was opening
		return 0, fmt.Errorf("port-forward to %s: %w", key, err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(k.Rest)
	if err != nil {
		return 0, err
	}
	url := k.CS.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	// The local side listens on 127.0.0.1 only, on a free port.
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, err
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		return 0, fmt.Errorf("port-forward to %s: %w", key, err)
	case <-ctx.Done():
		close(stop)
		return 0, fmt.Errorf("port-forward to %s: not open in the time allowed (%w)", key, ctx.Err())
	case <-time.After(cmp.Or(k.ForwardTimeout, DefaultForwardTimeout)):
		close(stop)
		return 0, fmt.Errorf("port-forward to %s: not ready after %s", key, cmp.Or(k.ForwardTimeout, DefaultForwardTimeout))
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return 0, fmt.Errorf("port-forward to %s: %v", key, err)
	}
	k.forwards[key] = &forward{stop: stop, local: ports[0].Local}
	return ports[0].Local, nil
}

func (k *Client) drop(ns, pod string, port int) {
	key := fmt.Sprintf("%s/%s:%d", ns, pod, port)
	k.mu.Lock()
	defer k.mu.Unlock()
	if f := k.forwards[key]; f != nil {
		close(f.stop)
		delete(k.forwards, key)
	}
}

// Exec runs cmd in a pod's container and returns its output.
func (k *Client) Exec(ctx context.Context, ns, pod, container string, cmd []string) ([]byte, []byte, error) {
	req := k.CS.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(k.Rest, http.MethodPost, req.URL())
	if err != nil {
		return nil, nil, err
	}
	var out, errb bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	if err != nil {
		return out.Bytes(), errb.Bytes(), fmt.Errorf("exec %s in %s/%s: %w: %s", strings.Join(cmd, " "), ns, pod, err, lastLine(errb.String()))
	}
	return out.Bytes(), errb.Bytes(), nil
}

// Close stops every port-forward.
func (k *Client) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, f := range k.forwards {
		close(f.stop)
		delete(k.forwards, key)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
