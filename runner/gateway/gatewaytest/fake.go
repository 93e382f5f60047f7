// Package gatewaytest has fakes of a real lab for tests: Envoy admins that answer with Istio's
// naming, a Kubernetes with ready and unready pods and load generators, and a Pulumi stack
// whose up pushes the scenario's EnvoyFilter to every Envoy.
package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// Envoy is one gateway pod's Envoy as its admin answers, with Istio's naming: HCM stats
// under several prefixes (admin, the stats listener, the gateway), per-worker stats with the
// worker in the metric name, and ";"-terminated prefixes in /stats.
type Envoy struct {
	workers  int
	cxHTTP2  int
	rq       int
	perWkr   []int
	Draining int
	spec     map[string]any // the EnvoyFilter in force
}

func (e *Envoy) prometheus() string {
	var b strings.Builder
	b.WriteString("# TYPE envoy_http_downstream_cx_total counter\n")
	fmt.Fprintf(&b, "envoy_http_downstream_cx_total{http_conn_manager_prefix=\"admin\"} 7\n")
	fmt.Fprintf(&b, "envoy_http_downstream_cx_total{http_conn_manager_prefix=\"outbound_0.0.0.0_80\"} %d\n", e.cxHTTP2)
	b.WriteString("# TYPE envoy_http_downstream_cx_http2_total counter\n")
	fmt.Fprintf(&b, "envoy_http_downstream_cx_http2_total{http_conn_manager_prefix=\"outbound_0.0.0.0_80\"} %d\n", e.cxHTTP2)
	b.WriteString("# TYPE envoy_http_downstream_rq_total counter\n")
	fmt.Fprintf(&b, "envoy_http_downstream_rq_total{http_conn_manager_prefix=\"outbound_0.0.0.0_80\"} %d\n", e.rq)
	b.WriteString("# TYPE envoy_listener_downstream_cx_total counter\n")
	fmt.Fprintf(&b, "envoy_listener_downstream_cx_total{listener_address=\"0.0.0.0_80\"} %d\n", e.cxHTTP2)
	fmt.Fprintf(&b, "envoy_listener_downstream_cx_total{listener_address=\"0.0.0.0_15090\"} 99\n")
	for w := 0; w < e.workers; w++ {
		fmt.Fprintf(&b, "# TYPE envoy_listener_worker_%d_downstream_cx_total counter\n", w)
		fmt.Fprintf(&b, "envoy_listener_worker_%d_downstream_cx_total{listener_address=\"0.0.0.0_80\"} %d\n", w, e.perWkr[w])
		fmt.Fprintf(&b, "envoy_listener_worker_%d_downstream_cx_total{listener_address=\"0.0.0.0_15090\"} 50\n", w)
	}
	b.WriteString("# TYPE envoy_cluster_upstream_rq_total counter\n")
	fmt.Fprintf(&b, "envoy_cluster_upstream_rq_total{cluster_name=\"outbound|8080||httpbin.igw-test.svc.cluster.local\"} %d\n", e.rq)
	fmt.Fprintf(&b, "envoy_cluster_upstream_rq_total{cluster_name=\"xds-grpc\"} 3\n")
	return b.String()
}

// configDump renders a listener the way Istio's Envoy dumps it, with the EnvoyFilter merged in.
func (e *Envoy) configDump() string {
	hcm := map[string]any{"@type": envoyfilter.HCMType, "stat_prefix": "outbound_0.0.0.0_80"}
	listener := map[string]any{"name": "0.0.0.0_80"}
	for _, p := range e.spec["configPatches"].([]any) {
		pm := p.(map[string]any)
		value := pm["patch"].(map[string]any)["value"].(map[string]any)
		if pm["applyTo"] == "LISTENER" {
			for k, v := range value {
				listener[k] = v
			}
			continue
		}
		for k, v := range value["typed_config"].(map[string]any) {
			hcm[k] = v
		}
	}
	listener["filter_chains"] = []any{map[string]any{"filters": []any{map[string]any{"name": envoyfilter.HCMFilter, "typed_config": hcm}}}}
	b, _ := json.Marshal(map[string]any{"configs": []any{map[string]any{
		"@type":             "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
		"dynamic_listeners": []any{map[string]any{"name": "0.0.0.0_80", "active_state": map[string]any{"listener": listener}}},
	}}})
	return string(b)
}

// Kube is a cluster of fake Envoys: pods from client-go's fake clientset, admin reads
// served by the fake Envoys, and load generators whose runs land on one pod.
type Kube struct {
	mu         sync.Mutex
	cs         *fake.Clientset
	EnvoyByPod map[string]*Envoy
	Execs      [][]string
	workers    int
}

func ReadyPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func NewKube(pods, workers int) *Kube {
	k := &Kube{cs: fake.NewSimpleClientset(), EnvoyByPod: map[string]*Envoy{}, workers: workers}
	add := func(p *corev1.Pod) {
		_, _ = k.cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	}
	for i := 0; i < pods; i++ {
		name := fmt.Sprintf("istio-ingressgateway-7c9d-%c", 'a'+i)
		p := ReadyPod("istio-ingress", name, map[string]string{"istio": "ingressgateway"})
		p.Spec.NodeName = Node
		add(p)
		k.EnvoyByPod[name] = &Envoy{workers: workers, perWkr: make([]int, workers),
			spec: map[string]any{"configPatches": []any{}}}
	}
	notReady := ReadyPod("istio-ingress", "istio-ingressgateway-7c9d-z", map[string]string{"istio": "ingressgateway"})
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	add(notReady)
	add(ReadyPod("loadgen", "h2dial-1", map[string]string{"app": "h2dial"}))
	add(ReadyPod("loadgen", "fortio-1", map[string]string{"app": "fortio"}))
	return k
}

// Clientset is the fake API server behind the pods, for tests that change pod status.
func (k *Kube) Clientset() *fake.Clientset { return k.cs }

func (k *Kube) Pods(ctx context.Context, ns, sel string) ([]corev1.Pod, error) {
	list, err := k.List(ctx, ns, sel)
	if err != nil {
		return nil, err
	}
	return kube.ReadyPods(list), nil
}

func (k *Kube) List(ctx context.Context, ns, sel string) ([]corev1.Pod, error) {
	list, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (k *Kube) Delete(ctx context.Context, ns, pod string, _ int64) error {
	return k.cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})
}

func (k *Kube) Get(_ context.Context, ns, pod string, port int, path string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.EnvoyByPod[pod]
	if e == nil || port != cluster.AdminPort {
		return nil, fmt.Errorf("no admin at %s/%s:%d", ns, pod, port)
	}
	switch {
	case path == "/server_info":
		return []byte(fmt.Sprintf(`{"version":"envoy 1.35","command_line_options":{"concurrency":%d}}`, e.workers)), nil
	case path == "/stats/prometheus":
		return []byte(e.prometheus()), nil
	case strings.HasPrefix(path, "/stats?filter=") && strings.Contains(path, "draining"):
		d := e.Draining
		if e.Draining > 0 {
			e.Draining-- // the old filter chain finishes draining after a poll
		}
		return []byte(fmt.Sprintf("listener_manager.total_filter_chains_draining: %d\nlistener_manager.total_listeners_draining: 0\n", d)), nil
	case path == "/config_dump":
		return []byte(e.configDump()), nil
	}
	return []byte("ok"), nil
}

// Exec plays a load generator: the run opens one connection, on the first gateway pod.
func (k *Kube) Exec(_ context.Context, ns, pod, container string, cmd []string) ([]byte, []byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.Execs = append(k.Execs, cmd)
	e := k.EnvoyByPod[slices.Min(slices.Collect(maps.Keys(k.EnvoyByPod)))]
	e.cxHTTP2++
	e.rq += 5000
	e.perWkr[0]++
	var res any = h2dial.Result{Requests: 5000, RPS: 1000, ConnectionsOpened: 1, Latency: h2dial.Latency{P99: 80}}
	if len(cmd) > 0 && cmd[0] == "/igwlab-grpc" {
		res = grpclab.Result{Requests: 5000, RPS: 1000, Dials: 1, Codes: map[string]int64{"OK": 5000}, Latency: h2dial.Latency{P99: 80}}
	}
	b, _ := json.Marshal(res)
	return b, nil, nil
}

func (k *Kube) Close() {}

// Node is the node the fake gateway pods run on.
const Node = "k3d-igw-tc-lab-agent-0"

// NodeProxy plays the node's kubelet: cAdvisor's metrics for each gateway pod's proxy
// container, one CPU second and a CPU limit of one core, never throttled.
func (k *Kube) NodeProxy(_ context.Context, node, path string) ([]byte, error) {
	if node != Node || path != "/metrics/cadvisor" {
		return nil, fmt.Errorf("no %s on node %s", path, node)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var b strings.Builder
	for _, pod := range slices.Sorted(maps.Keys(k.EnvoyByPod)) {
		l := fmt.Sprintf(`{container="istio-proxy",namespace="istio-ingress",pod=%q}`, pod)
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total%s 1\ncontainer_spec_cpu_quota%s 100000\ncontainer_spec_cpu_period%s 100000\n", l, l, l)
		fmt.Fprintf(&b, "container_cpu_cfs_periods_total%s 10\ncontainer_cpu_cfs_throttled_periods_total%s 0\ncontainer_cpu_cfs_throttled_seconds_total%s 0\n", l, l, l)
	}
	return []byte(b.String()), nil
}

// Stack records config and, on Up, pushes the scenario's EnvoyFilter to every fake Envoy,
// which then drains its old listener for a poll.
type Stack struct {
	KubeRef *Kube
	Config  map[string]string
	Ups     []string
	// BlockUp makes Up wait for its context to end, as an update that is interrupted does;
	// Pending is then what the stack's state records as left in flight.
	BlockUp bool
	Pending []string
	// Previews are the config changes each Preview was given.
	Previews []map[string]string
	// Outs are the stack's outputs.
	Outs map[string]any
	// CLI is the Pulumi CLI's version ("": the lab's pinned CLI, pulumistack.MinCLI or later).
	CLI string

	// The gateway Deployment's state (pool.go).
	own, replicaSet, created int
	restarted                string
}

func (s *Stack) Name() string { return "lab" }
func (s *Stack) SetConfig(_ context.Context, k, v string, _ bool) error {
	s.Config[k] = v
	return nil
}
func (s *Stack) GetConfig(_ context.Context, k string) (string, bool, error) {
	v, ok := s.Config[k]
	return v, ok, nil
}
func (s *Stack) AllConfig(context.Context) (map[string]string, error) {
	return maps.Clone(s.Config), nil
}
func (s *Stack) RemoveConfig(_ context.Context, k string) error { delete(s.Config, k); return nil }
func (s *Stack) Up(ctx context.Context, _ io.Writer) (map[string]any, error) {
	if s.BlockUp {
		<-ctx.Done()
		return nil, fmt.Errorf("update canceled: %w", ctx.Err())
	}
	cat, _ := stacks.Builtin()
	sc, err := cat.MustGet(s.Config[configkey.Full(configkey.Scenario)])
	if err != nil {
		return nil, err
	}
	s.Ups = append(s.Ups, sc.Name)
	lab := sc.Lab()
	if raw, ok := s.Config[configkey.Full(configkey.Knobs)]; ok {
		// The program lays igwlab:knobs over the scenario's knobs (a --set, a sweep's value).
		var over stacks.Knobs
		if err := over.UnmarshalJSON([]byte(raw)); err != nil {
			return nil, err
		}
		lab.Knobs = lab.Knobs.Overlay(over)
	}
	spec := envoyfilter.Spec(lab, envoyfilter.DefaultTarget)
	if raw, ok := s.Config[configkey.Full(configkey.GatewayPush)]; ok {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, err
		}
		envoyfilter.WithPush(spec, envoyfilter.DefaultTarget, n)
	}
	if err := s.reconcile(ctx); err != nil {
		return nil, err
	}
	s.KubeRef.mu.Lock()
	for _, e := range s.KubeRef.EnvoyByPod {
		e.spec, e.Draining = spec, 1
	}
	s.KubeRef.mu.Unlock()
	return map[string]any{}, nil
}

// Preview records the config changes it was asked to preview; the stack's config is untouched.
func (s *Stack) Preview(_ context.Context, changes map[string]string, _ io.Writer) (*pulumistack.Preview, error) {
	s.Previews = append(s.Previews, changes)
	return &pulumistack.Preview{Diff: fmt.Sprint(changes)}, nil
}
func (s *Stack) Destroy(context.Context, io.Writer) error            { return nil }
func (s *Stack) Cancel(context.Context) error                        { return nil }
func (s *Stack) Outputs(context.Context) (map[string]any, error)     { return s.Outs, nil }
func (s *Stack) PendingOperations(context.Context) ([]string, error) { return s.Pending, nil }
func (s *Stack) CLIVersion(context.Context) (string, error) {
	if s.CLI == "" {
		return "3.274.1", nil
	}
	return s.CLI, nil
}

// AfterApply is a real-lab target that calls After once each scenario has been applied: a test
// reads the stack's config there, or cancels the run as a Ctrl-C would.
type AfterApply struct {
	*cluster.Cluster
	After func()
}

// Apply implements the target's Apply, then calls After.
func (a *AfterApply) Apply(ctx context.Context, sc stacks.Scenario) error {
	err := a.Cluster.Apply(ctx, sc)
	a.After()
	return err
}
