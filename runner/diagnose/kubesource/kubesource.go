// Package kubesource is diagnose's Kubernetes source: it finds the gateway pods by namespace
// and label selector through the API server, then samples each pod's Envoy admin through the
// port-forward the cluster target uses (runner/kube). The two steps sit behind their own small
// interfaces, so the sampling runs the same on any pods a test can reach. It links client-go,
// so only igwlab-lab holds it.
package kubesource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/stats"
)

// Finder finds the pods a label selector matches in a namespace, whatever their phase.
type Finder interface {
	List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
}

// Reacher performs an HTTP GET on a pod's port.
type Reacher interface {
	Get(ctx context.Context, namespace, pod string, port int, path string) ([]byte, error)
}

// NodeReacher also reads a node's kubelet through the API server (kube.Client.NodeProxy): a
// Reacher that is one has the nodes' cAdvisor metrics read for the pods' CPU limits and
// throttling.
type NodeReacher interface {
	NodeProxy(ctx context.Context, node, path string) ([]byte, error)
}

// Check rejects options the API server would reject later, or that would wait for ever.
func Check(o diagnose.KubeOptions) error {
	if o.Namespace == "" {
		return errors.New("--namespace: empty (the gateway pods' namespace, e.g. " + diagnose.LabNamespace + ")")
	}
	if _, err := labels.Parse(o.Selector); err != nil || strings.TrimSpace(o.Selector) == "" {
		return fmt.Errorf("--selector %q: want a label selector as kubectl -l takes it, e.g. %s", o.Selector, diagnose.LabSelector)
	}
	if o.Duration <= 0 || o.Timeout <= 0 {
		return fmt.Errorf("--duration %s, --timeout %s: both must be positive", o.Duration, o.Timeout)
	}
	return nil
}

// Kube is the source over client-go: the kubeconfig and context are loaded when its window is
// asked for, and its port-forwards are closed when the window is read.
type Kube struct{ diagnose.KubeOptions }

// Window implements diagnose.Source.
func (k Kube) Window(ctx context.Context) (*diagnose.Window, error) {
	cfg, err := kube.Config(k.Kubeconfig, k.Context)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, "`kubectl config get-contexts"+kubectlFlags(k.KubeOptions)+"` lists the contexts")
	}
	cfg.Timeout = k.Timeout
	c, err := kube.NewClientFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.Timeout, c.ForwardTimeout = k.Timeout, k.Timeout
	return Pods{KubeOptions: k.KubeOptions, Find: c, Reach: c, Server: cfg.Host}.Window(ctx)
}

// Pods is the source in its two steps: Find lists the pods, Reach reads each one's admin.
type Pods struct {
	diagnose.KubeOptions
	Find  Finder
	Reach Reacher
	// Server names the API server in messages.
	Server string
}

// Window implements diagnose.Source.
func (p Pods) Window(ctx context.Context) (*diagnose.Window, error) {
	names, nodes, skipped, err := p.find(ctx)
	if err != nil {
		return nil, err
	}
	src := fmt.Sprintf("Kubernetes: %d pod(s) in %s matching %s, Envoy admin :%d through port-forwards", len(names), p.Namespace, p.Selector, p.adminPort())
	var cpu diagnose.CAdvisor
	if nr, ok := p.Reach.(NodeReacher); ok && len(nodes) > 0 {
		cpu = nodeCAdvisor{p: p, nr: nr, nodes: nodes}
		src += fmt.Sprintf("; their nodes' cAdvisor through the API server (%d node(s))", len(nodes))
	}
	w, err := diagnose.Sample(ctx, src, names, admins{p}, p.Duration, cpu, p.Pick)
	if err != nil {
		return nil, fmt.Errorf("reading the gateway pods' Envoy admin: %w; check that `kubectl%s port-forward -n %s pod/%s %d` works (it needs the pods/portforward permission, and the API server reaching the kubelet on the pod's node)",
			err, kubectlFlags(p.KubeOptions), p.Namespace, names[0], p.adminPort())
	}
	w.Missing = append(skipped, w.Missing...)
	return w, nil
}

// find lists the pods and keeps those Running; it names the others, and is an error that says
// what to check when none is left.
func (p Pods) find(ctx context.Context) (names, nodes, skipped []string, err error) {
	lctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	pods, err := p.Find.List(lctx, p.Namespace, p.Selector)
	check := fmt.Sprintf("`kubectl%s get pods -n %s -l %s`", kubectlFlags(p.KubeOptions), p.Namespace, p.Selector)
	switch {
	case isAPIStatus(err):
		return nil, nil, nil, fmt.Errorf("the API server %s would not list the pods in %s: %w; check %s", p.Server, p.Namespace, err, check)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(lctx.Err(), context.DeadlineExceeded):
		return nil, nil, nil, fmt.Errorf("no answer from the API server %s within %s: is the cluster up, and --context the one you mean? check %s", p.Server, p.Timeout, check)
	case err != nil:
		return nil, nil, nil, fmt.Errorf("cannot reach the API server %s: %w; is the cluster up, and --context the one you mean? check %s", p.Server, err, check)
	case len(pods) == 0:
		return nil, nil, nil, fmt.Errorf("no pod in namespace %s matches the selector %s: check %s, and give the gateway's own with --namespace and --selector (Istio's gateway chart labels its pods istio=<gateway name>; older installs app=istio-ingressgateway)",
			p.Namespace, p.Selector, check)
	}
	var down []string
	seen := map[string]bool{}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			names = append(names, pod.Name)
			if n := pod.Spec.NodeName; n != "" && !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
			continue
		}
		down = append(down, fmt.Sprintf("%s (%s)", pod.Name, state(pod)))
	}
	sort.Strings(names)
	sort.Strings(down)
	if len(names) == 0 {
		return nil, nil, nil, fmt.Errorf("none of the %d pod(s) in %s matching %s is Running: %s; `kubectl%s describe pods -n %s -l %s` says why",
			len(pods), p.Namespace, p.Selector, strings.Join(down, ", "), kubectlFlags(p.KubeOptions), p.Namespace, p.Selector)
	}
	if len(down) > 0 {
		skipped = []string{"pods not Running, left out: " + strings.Join(down, ", ")}
	}
	sort.Strings(nodes)
	return names, nodes, skipped, nil
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return err != nil && errors.As(err, &s)
}

// state is a pod's phase, with its reason when it has one, or being deleted.
func state(p corev1.Pod) string {
	s := string(p.Status.Phase)
	if s == "" {
		s = "no phase yet"
	}
	if p.DeletionTimestamp != nil {
		s += ", being deleted"
	}
	if p.Status.Reason != "" {
		s += ": " + p.Status.Reason
	}
	return s
}

// kubectlFlags are the kubectl flags that reach the same cluster, for the commands a message
// names.
func kubectlFlags(o diagnose.KubeOptions) string {
	var s string
	if o.Kubeconfig != "" {
		s += " --kubeconfig " + o.Kubeconfig
	}
	if o.Context != "" {
		s += " --context " + o.Context
	}
	return s
}

// adminPort is the pods' Envoy admin port: the option's, or Istio's (15000).
func (p Pods) adminPort() int {
	if p.AdminPort > 0 {
		return p.AdminPort
	}
	return kube.AdminPort
}

// admins reaches each pod's Envoy admin through Reach, each request bounded by Timeout.
type admins struct{ p Pods }

func (a admins) Get(ctx context.Context, pod, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.p.Timeout)
	defer cancel()
	return a.p.Reach.Get(ctx, a.p.Namespace, pod, a.p.adminPort(), path)
}

// nodeCAdvisor reads the pods' nodes' /metrics/cadvisor through the API server's node proxy.
type nodeCAdvisor struct {
	p     Pods
	nr    NodeReacher
	nodes []string
}

func (n nodeCAdvisor) Pages(ctx context.Context) ([]stats.Snapshot, error) {
	var out []stats.Snapshot
	for _, node := range n.nodes {
		cctx, cancel := context.WithTimeout(ctx, n.p.Timeout)
		b, err := n.nr.NodeProxy(cctx, node, "/metrics/cadvisor")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w (it needs the nodes/proxy permission: `kubectl%s get --raw /api/v1/nodes/%s/proxy/metrics/cadvisor`)", err, kubectlFlags(n.p.KubeOptions), node)
		}
		s, err := stats.ParseSnapshot(node, time.Now(), b)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
