package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
)

// TestClusterDisruptionsFromPodStatus: on a real cluster the target reads disruptions from
// what Kubernetes records: an Envoy container that restarted, a pod that joined the pool, and
// a pod of the scenario's start that is no longer ready.
func TestClusterDisruptionsFromPodStatus(t *testing.T) {
	k := gatewaytest.NewKube(3, 1)
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, DrainTimeout: time.Second})
	ctx := context.Background()
	if _, err := c.Pods(ctx, gateway.Gateway); err != nil { // the scenario's start
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Second)
	if ds := c.Disruptions(since); len(ds) != 0 {
		t.Fatalf("a quiet pool reports %+v", ds)
	}
	pods := k.Clientset().CoreV1().Pods("istio-ingress")
	restarted, err := pods.Get(ctx, "istio-ingressgateway-7c9d-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "istio-proxy", RestartCount: 1,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(time.Now())}}}}
	if _, err := pods.UpdateStatus(ctx, restarted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "istio-ingressgateway-7c9d-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := gatewaytest.ReadyPod("istio-ingress", "istio-ingressgateway-7c9d-n", map[string]string{"istio": "ingressgateway"})
	fresh.CreationTimestamp = metav1.NewTime(time.Now())
	if _, err := pods.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Disruptions(since) {
		got = append(got, d.Kind+" "+d.Pod+": "+d.Detail)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"restart istio-ingressgateway-7c9d-a: container istio-proxy terminated (OOMKilled, exit code 137)",
		"gone istio-ingressgateway-7c9d-b",
		"new-pod istio-ingressgateway-7c9d-n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("disruptions lack %q:\n%s", want, all)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d disruptions, want 3:\n%s", len(got), all)
	}
}
