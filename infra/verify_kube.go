package infra

import (
	"context"
	"fmt"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/runner/inforce"
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

// podsAt opens the ready pods a selector matches, through a client of their own that the
// check closes after it.
func podsAt(clients func(context.Context) (*kube.Client, error), ns, sel string) func(context.Context) (inforce.Pool, func(), error) {
	return func(ctx context.Context) (inforce.Pool, func(), error) {
		kc, err := clients(ctx)
		if err != nil {
			return nil, nil, err
		}
		return kubePods{kc: kc, ns: ns, sel: sel}, kc.Close, nil
	}
}

// gatewayPodsAt sends the waypoint check's requests to the gateway pods' listener through
// port-forwards, one pod after the other: on an existing cluster the program knows no address
// of the gateway's Service (igwlab:gatewayUrl gives one).
func gatewayPodsAt(clients func(context.Context) (*kube.Client, error), t envoyfilter.Target) func(context.Context) (inforce.Send, func(), error) {
	return func(ctx context.Context) (inforce.Send, func(), error) {
		kc, err := clients(ctx)
		if err != nil {
			return nil, nil, err
		}
		gw := kubePods{kc: kc, ns: t.Namespace, sel: selectorText(t.Selector)}
		next := 0
		return func(ctx context.Context) error {
			pods, err := gw.Pods(ctx)
			if err != nil {
				return err
			}
			if len(pods) == 0 {
				return fmt.Errorf("no ready gateway pod (%s in %s)", gw.sel, gw.ns)
			}
			next++
			_, err = kc.Get(ctx, gw.ns, pods[next%len(pods)], t.Port, WaypointProbePath)
			return err
		}, kc.Close, nil
	}
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
