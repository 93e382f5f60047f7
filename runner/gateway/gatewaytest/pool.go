package gatewaytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/kube"
)

// The fake stack's up does the gateway Deployment's part for the pool changes of a
// scenario's events: igwlab:gatewayReplicas adds or removes pods (the newest first), a new
// igwlab:gatewayRestartedAt replaces every pod with one of a new ReplicaSet.

const gatewaySelector = "istio=ingressgateway"

// reconcile brings the gateway pods to the stack's replicas and restart (k.mu not held).
func (s *Stack) reconcile(ctx context.Context) error {
	k := s.KubeRef
	pods := k.cs.CoreV1().Pods("istio-ingress")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: gatewaySelector})
	if err != nil {
		return err
	}
	var names []string
	for _, p := range kube.ReadyPods(list.Items) {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	want := len(names)
	if raw, ok := s.Config[configkey.Full(configkey.GatewayReplicas)]; ok {
		if want, err = strconv.Atoi(raw); err != nil {
			return err
		}
	} else if s.own > 0 {
		want = s.own
	}
	if s.own == 0 {
		s.own = len(names)
	}
	restart := s.Config[configkey.Full(configkey.GatewayRestartedAt)]
	var drop []string
	if restart != s.restarted {
		s.restarted, s.replicaSet = restart, s.replicaSet+1
		drop, names = names, nil
	}
	for len(names) > want {
		drop, names = append(drop, names[len(names)-1]), names[:len(names)-1]
	}
	for _, n := range drop {
		if err := pods.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			return err
		}
		k.mu.Lock()
		delete(k.EnvoyByPod, n)
		k.mu.Unlock()
	}
	for len(names) < want {
		s.created++
		n := fmt.Sprintf("istio-ingressgateway-rs%d-%03d", s.replicaSet, s.created)
		p := ReadyPod("istio-ingress", n, map[string]string{"istio": "ingressgateway"})
		p.CreationTimestamp = metav1.NewTime(time.Now())
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
		k.mu.Lock()
		k.EnvoyByPod[n] = &Envoy{workers: k.workers, perWkr: make([]int, k.workers), spec: map[string]any{"configPatches": []any{}}}
		k.mu.Unlock()
		names = append(names, n)
	}
	return nil
}
