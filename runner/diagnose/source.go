package diagnose

import (
	"context"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// Source is where diagnose reads a pool from: Prometheus, admin endpoints, or Kubernetes.
type Source interface {
	Window(ctx context.Context) (*Window, error)
}

// KubeOptions select gateway pods through Kubernetes. The source that reads them
// (runner/diagnose/kubesource) links client-go, so it is in igwlab-lab only.
type KubeOptions struct {
	Kubeconfig string // empty: $KUBECONFIG, then ~/.kube/config
	Context    string // empty: the kubeconfig's current context
	Namespace  string
	Selector   string // a label selector, as kubectl -l takes it
	// Duration is how long to watch; Timeout bounds each step (listing the pods, opening a
	// port-forward, one admin request).
	Duration, Timeout time.Duration
	// Pick names the traffic's connection manager and listener instead of discovering them.
	Pick stats.Pick
	// AdminPort is the pods' Envoy admin port (0: Istio's, 15000; Envoy Gateway, Gloo and
	// Consul's dataplane bind 19000, Emissary 8001).
	AdminPort int
}

// The lab's gateway pods (Istio's gateway chart released as istio-ingressgateway in
// istio-ingress), which diagnose looks for through Kubernetes unless told otherwise.
const (
	LabNamespace = "istio-ingress"
	LabSelector  = "istio=ingressgateway"
)
