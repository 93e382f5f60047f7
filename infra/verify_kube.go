package infra

import (
	"context"
	"fmt"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/runner/kube"
)

// kubePods are the gateway pods reached through the Kubernetes API, as the cluster target
// reaches them: the ready pods the EnvoyFilter's selector matches, and a port-forward to each
// one's admin.
type kubePods struct {
	kc      *kube.Client
	ns, sel string
}

func (k kubePods) Pods(ctx context.Context) ([]string, error) {
	pods, err := k.kc.Pods(ctx, k.ns, k.sel)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out, nil
}

func (k kubePods) Admin(ctx context.Context, pod, path string) ([]byte, error) {
	return k.kc.Get(ctx, k.ns, pod, kube.AdminPort, path)
}

// kubeClients opens a client per check (the check closes its port-forwards after it): from
// the k3d cluster's kubeconfig when there is one, else the stack's kubeconfig and context.
func kubeClients(cfg Config, kubeconfig pulumi.StringInput) func(context.Context) (*kube.Client, error) {
	// The k3d kubeconfig is an output; the checks run after the resources that need the
	// cluster, so it has resolved by then.
	text := make(chan string, 1)
	if kubeconfig != nil {
		kubeconfig.ToStringOutput().ApplyT(func(s string) string {
			text <- s
			return s
		})
	}
	var mu sync.Mutex
	var resolved string
	return func(ctx context.Context) (*kube.Client, error) {
		var kc *kube.Client
		var err error
		if kubeconfig != nil {
			mu.Lock()
			if resolved == "" {
				select {
				case resolved = <-text:
				case <-ctx.Done():
					mu.Unlock()
					return nil, ctx.Err()
				}
			}
			s := resolved
			mu.Unlock()
			kc, err = kube.NewClientFromKubeconfig(s, "")
		} else {
			kc, err = kube.NewClient(cfg.Kubeconfig, cfg.KubeContext)
		}
		if err != nil {
			return nil, fmt.Errorf("kubeconfig for the checks: %w", err)
		}
		return kc, nil
	}
}

// PrometheusSelector and PrometheusPort find kube-prometheus-stack's Prometheus pod and its
// HTTP API.
const (
	PrometheusSelector = "app.kubernetes.io/name=prometheus"
	PrometheusPort     = 9090
)

// prometheusAt reads Prometheus's HTTP API through a port-forward to its pod.
func prometheusAt(kc *kube.Client) func(context.Context, string) ([]byte, error) {
	return func(ctx context.Context, path string) ([]byte, error) {
		pods, err := kc.Pods(ctx, MonitorNamespace, PrometheusSelector)
		if err != nil {
			return nil, err
		}
		if len(pods) == 0 {
			return nil, fmt.Errorf("no ready Prometheus pod (%s in %s)", PrometheusSelector, MonitorNamespace)
		}
		return kc.Get(ctx, MonitorNamespace, pods[0].Name, PrometheusPort, path)
	}
}
