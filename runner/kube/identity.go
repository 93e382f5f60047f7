package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Identity is the API server's address and the kube-system namespace's UID: the UID is made
// once per cluster, so it names one cluster whatever kubeconfig, context or address reaches it.
func (k *Client) Identity(ctx context.Context) (server, uid string, err error) {
	ns, err := k.CS.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return k.Rest.Host, "", err
	}
	return k.Rest.Host, string(ns.UID), nil
}

// Allocatable is the CPU (millicores) each node the scheduler may use offers: nodes that are
// not cordoned and carry no NoSchedule or NoExecute taint.
func (k *Client) Allocatable(ctx context.Context) ([]int64, error) {
	nodes, err := k.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, n := range nodes.Items {
		if Schedulable(n) {
			out = append(out, n.Status.Allocatable.Cpu().MilliValue())
		}
	}
	return out, nil
}

// Schedulable reports whether the scheduler may place the lab's pods on a node: not cordoned,
// and no NoSchedule or NoExecute taint.
func Schedulable(n corev1.Node) bool { return !n.Spec.Unschedulable && !tainted(n) }

func tainted(n corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// NodeProxy GETs path from a node's kubelet through the API server's node proxy
// (/api/v1/nodes/<node>/proxy<path>), as kubectl get --raw does: a kubelet's
// /metrics/cadvisor, which the API server reaches with its own kubelet credentials.
func (k *Client) NodeProxy(ctx context.Context, node, path string) ([]byte, error) {
	b, err := k.CS.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", path).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("node %s %s: %w", node, path, err)
	}
	return b, nil
}
