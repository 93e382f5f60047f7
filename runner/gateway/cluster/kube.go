package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/igwlab/igwlab/runner/kube"
)

// Kube is what the cluster target needs from Kubernetes: its pods, an HTTP GET on a pod's
// port (Envoy's admin, through a port-forward), a command run in a pod, and a pod deleted.
// kube.Client is it over client-go.
type Kube interface {
	Pods(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
	// List is every pod the selector matches, whatever its phase (Pods keeps the ready ones).
	List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
	// Delete deletes a pod with a grace period in seconds.
	Delete(ctx context.Context, namespace, pod string, graceSeconds int64) error
	Get(ctx context.Context, namespace, pod string, port int, path string) ([]byte, error)
	Exec(ctx context.Context, namespace, pod, container string, cmd []string) (stdout, stderr []byte, err error)
	// NodeProxy GETs path from a node's kubelet through the API server
	// (/api/v1/nodes/<node>/proxy<path>): its cAdvisor metrics.
	NodeProxy(ctx context.Context, node, path string) ([]byte, error)
	Close()
}

var _ Kube = (*kube.Client)(nil)
