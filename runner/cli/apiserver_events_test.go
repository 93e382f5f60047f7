package cli

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

var deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// kubeletStandIn does the nodes' part for the emulated pool: it follows the gateway
// Deployment the chart made, starting and stopping emulated pods as its replicas change and,
// with restarts on, restarting every pod in place (a new Envoy, uptime from zero) when the
// pod template's restartedAt annotation changes, as a finished rollout leaves the pool.
type kubeletStandIn struct {
	pool     *emulator.Pool
	restarts atomic.Bool
	replicas int
	restart  string
}

func (k *kubeletStandIn) run(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	for ctx.Err() == nil {
		d, err := dyn.Resource(deployGVR).Namespace(infra.GatewayNamespace).Get(ctx, infra.GatewayRelease, metav1.GetOptions{})
		if err == nil {
			n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
			if int(n) != k.replicas && n > 0 {
				if err := k.pool.ScaleTo(int(n), emulator.Lifecycle{ReadyDelay: 500 * time.Millisecond, TerminationDrain: 200 * time.Millisecond}); err != nil {
					t.Errorf("scaling the emulated pool to %d: %v", n, err)
				}
				k.replicas = int(n)
			}
			if at := ann[infra.RestartedAtAnnotation]; at != k.restart && k.restarts.Load() {
				k.restart = at
				for i, p := range k.pool.Pods() {
					if !p.Up() {
						continue
					}
					if err := k.pool.KillPod(i); err != nil {
						t.Errorf("restarting pod %d: %v", i, err)
					}
					if err := k.pool.RestartPod(i); err != nil {
						t.Errorf("restarting pod %d: %v", i, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// poolEventsThroughTheStack is the real lab's half of a scenario's events, on the stack that
// TestAPIServerTierWithIstioCharts installed with Istio's charts: each event is stack config
// and a pulumi up, its preview is an update of the one resource it changes, the Deployment
// controller acts on it, and the program's after-update checks (on the emulated pods, with
// the stand-ins doing istiod's and the nodes' part) verify it: the new pods ready after a
// scale-out; every pod new after a rolling restart (and the update failing while an old pod
// serves); a config push in force on every pod and drained (a push that reaches no pod fails
// as TestWaitSeesPushRestartAndReadiness shows, and as TestAPIServerTierHooks shows for knobs).
func poolEventsThroughTheStack(t *testing.T, st pulumistack.Stack, dyn dynamic.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, err := emulator.Start(emulator.Config{Pods: 3, Workers: 1, ListenerDrainTime: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.SetReplicas(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var admins []string
	for _, p := range pool.Pods() {
		admins = append(admins, p.AdminURL())
	}
	istiod := &istiodStandIn{pool: pool}
	istiod.push.Store(true)
	go istiod.run(ctx, dyn)

	up := func(what string, conf map[string]string) (string, error) {
		t.Helper()
		return upWith(ctx, t, st, what, conf)
	}
	preview := func(what string, conf map[string]string, resource string, want ...string) {
		t.Helper()
		full := map[string]string{}
		for k, v := range conf {
			full["igwlab:"+k] = v
		}
		p, err := st.Preview(ctx, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		for op, n := range p.Changes {
			if op != "same" && op != "read" && !(op == "update" && n == 1) {
				t.Errorf("%s would %s %d resources, want one update", what, op, n)
			}
		}
		for _, w := range append(want, resource) {
			if !strings.Contains(p.Diff, w) {
				t.Errorf("the preview of %s does not show %q:\n%s", what, w, p.Diff)
			}
		}
	}
	deployment := func() *unstructured.Unstructured {
		t.Helper()
		d, err := dyn.Resource(deployGVR).Namespace(infra.GatewayNamespace).Get(ctx, infra.GatewayRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Scale-out from the chart's six to three, with the checks on: two emulated pods serve and
	// the check waits for the third's readiness.
	kubelet := &kubeletStandIn{pool: pool, replicas: infra.Defaults.GatewayReplicas}
	go kubelet.run(ctx, t, dyn)
	scale := map[string]string{"verify": "true", "verifyTimeout": "5s", "gatewayReplicas": "3", "gatewayAdmins": strings.Join(admins, ",")}
	preview("scale to 3", scale, "helm.sh/v3:Release", "replicaCount")
	out, err := up("scale to 3", scale)
	if err != nil {
		t.Fatalf("scale to 3: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`verify: gateway: 3/3 pods ready`).MatchString(out) {
		t.Errorf("the scale-out's check does not say the new pod serves:\n%s", out)
	}
	if r, _, _ := unstructured.NestedInt64(deployment().Object, "spec", "replicas"); r != 3 {
		t.Errorf("Deployment replicas %d, want 3", r)
	}

	// A rolling restart the pods never saw: the check fails naming the old pods.
	restart := map[string]string{"gatewayRestartedAt": time.Now().UTC().Format(time.RFC3339), "gatewayMaxSurge": "1", "gatewayMaxUnavailable": "0"}
	preview("a rolling restart", restart, "helm.sh/v3:Release", infra.RestartedAtAnnotation, "maxSurge")
	out, err = up("restart, pods not restarted", restart)
	if err == nil || !strings.Contains(err.Error()+out, "an old pod still serves") || !strings.Contains(err.Error()+out, infra.GatewayCheck) {
		t.Errorf("a restart no pod took passed its check: %v\n%s", err, out)
	}
	d := deployment()
	if ann, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", infra.RestartedAtAnnotation); ann != restart["gatewayRestartedAt"] {
		t.Errorf("the pod template's %s is %q, want %q", infra.RestartedAtAnnotation, ann, restart["gatewayRestartedAt"])
	}
	if s, _, _ := unstructured.NestedInt64(d.Object, "spec", "strategy", "rollingUpdate", "maxSurge"); s != 1 {
		t.Errorf("the Deployment's maxSurge %d, want 1", s)
	}
	// The Deployment controller made a ReplicaSet for the new pod template.
	rsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs, err := dyn.Resource(rsGVR).Namespace(infra.GatewayNamespace).List(ctx, metav1.ListOptions{})
		if err == nil && len(rs.Items) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second ReplicaSet for the restarted template: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The pods restart: the next restart's check passes.
	kubelet.restarts.Store(true)
	time.Sleep(time.Second) // a new annotation value: RFC 3339 has whole seconds
	restart["gatewayRestartedAt"] = time.Now().UTC().Format(time.RFC3339)
	if out, err = up("restart", restart); err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	if !strings.Contains(out, "every one started after the restart of "+restart["gatewayRestartedAt"]) {
		t.Errorf("the restart's check does not say every pod is new:\n%s", out)
	}

	// A config push: an update of the EnvoyFilter alone; the check waits for it and its drain.
	preview("a config push", map[string]string{"gatewayPush": "1"}, "EnvoyFilter", "igwlab.push")
	if out, err = up("push", map[string]string{"gatewayPush": "1"}); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !strings.Contains(out, "config push 1 drained") {
		t.Errorf("the push's check does not say it drained:\n%s", out)
	}
}
