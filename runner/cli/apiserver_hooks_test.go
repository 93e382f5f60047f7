package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway/kubetest"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// istiodStandIn does istiod's part for the emulated pool: each EnvoyFilter version that
// reaches the API server is turned into the pool's knobs, as istiod would push it to the
// gateway pods (with its config push generation), and the httpbin Service's istio.io/use-waypoint label routes the pods through
// the pool's waypoint tier. With push off it applies nothing: an EnvoyFilter that matched no
// listener; with waypoints off it ignores the label: a waypoint that never took the traffic.
type istiodStandIn struct {
	pool      *emulator.Pool
	push      atomic.Bool
	waypoints atomic.Bool
	mu        sync.Mutex
	version   string
	err       error
}

var serviceGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}

func (s *istiodStandIn) run(ctx context.Context, dyn dynamic.Interface) {
	for ctx.Err() == nil {
		obj, err := dyn.Resource(efGVR).Namespace(envoyfilter.DefaultTarget.Namespace).Get(ctx, envoyfilter.DefaultName, metav1.GetOptions{})
		svc, svcErr := dyn.Resource(serviceGVR).Namespace(infra.BackendNamespace).Get(ctx, "httpbin", metav1.GetOptions{})
		waypoint := svcErr == nil && s.waypoints.Load() && svc.GetLabels()["istio.io/use-waypoint"] == infra.WaypointName
		if err == nil && s.push.Load() && fmt.Sprintf("%s/%v", obj.GetResourceVersion(), waypoint) != s.seen() {
			// Through JSON, the way an xDS push carries numbers.
			raw, _ := json.Marshal(obj.Object["spec"])
			var spec map[string]any
			_ = json.Unmarshal(raw, &spec)
			k, _, err := envoyfilter.Knobs(spec)
			push, perr := envoyfilter.Push(spec)
			s.mu.Lock()
			if err = errors.Join(err, perr); err != nil {
				s.err = err
			} else {
				s.pool.Apply(emulator.Setup{Knobs: k, Waypoint: waypoint, Push: push})
				s.version = fmt.Sprintf("%s/%v", obj.GetResourceVersion(), waypoint)
			}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *istiodStandIn) seen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// verifyLine is the check's line in pulumi up's output.
var verifyLine = regexp.MustCompile(`verify: [^\n]*`)

// upWith sets igwlab: config on the stack, runs pulumi up, logs the checks' lines (each
// once) and returns its output.
func upWith(ctx context.Context, t *testing.T, st pulumistack.Stack, what string, conf map[string]string) (string, error) {
	t.Helper()
	for k, v := range conf {
		if err := st.SetConfig(ctx, "igwlab:"+k, v, false); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	_, err := st.Up(ctx, &out)
	seen := map[string]bool{}
	for _, l := range verifyLine.FindAllString(out.String(), -1) {
		if !seen[l] {
			seen[l] = true
			t.Logf("%s: %s", what, l)
		}
	}
	return out.String(), err
}

// TestAPIServerTierHooks runs the program's after-update checks (Pulumi resource hooks)
// through the Pulumi CLI against a real kube-apiserver, with the local emulator's pods standing
// in for the gateway and waypoint pods: a scenario switch passes its check and says so, and
// the switch to a waypoint scenario sees the gateway's requests on the waypoint pods; when the
// EnvoyFilter reaches no pod, pulumi up fails naming the field and the pods, and the stack
// keeps the new EnvoyFilter; when the waypoint takes no traffic, pulumi up fails naming the
// waypoint pods and the likely causes; igwlab:verify false turns the check off.
func TestAPIServerTierHooks(t *testing.T) {
	kubeBin, pulumiBin := apiServerTools(t)
	cp := kubetest.Start(t, kubeBin)
	cp.ApplyCRDs(t,
		filepath.Join(kubetest.ModuleDir(t, "istio.io/api@v1.27.3"), "kubernetes", "customresourcedefinitions.gen.yaml"),
		filepath.Join(kubetest.ModuleDir(t, "sigs.k8s.io/gateway-api@v1.3.0"), "config", "crd", "standard", "gateway.networking.k8s.io_gateways.yaml"))
	pool, err := emulator.Start(emulator.Config{Pods: 2, Workers: 1, WaypointPods: 2, ListenerDrainTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var admins, pods []string
	for _, p := range pool.Pods() {
		admins = append(admins, p.AdminURL())
		pods = append(pods, strings.TrimPrefix(p.AdminURL(), "http://"))
	}
	var waypointAdmins, waypointPods []string
	for _, p := range pool.Waypoints() {
		waypointAdmins = append(waypointAdmins, p.AdminURL())
		waypointPods = append(waypointPods, strings.TrimPrefix(p.AdminURL(), "http://"))
	}
	dyn, err := dynamic.NewForConfig(cp.Rest)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	istiod := &istiodStandIn{pool: pool}
	istiod.push.Store(true)
	istiod.waypoints.Store(true)
	go istiod.run(ctx, dyn)

	const name = "igwlab-hooks-test"
	st, inline := apiServerStack(t, pulumiBin, name, map[string]string{"kubeconfig": cp.Kubeconfig,
		"installUpstream": "false", "monitoring": "false", "verify": "true", "gatewayAdmins": strings.Join(admins, ","), "verifyTimeout": "10s",
		"waypointAdmins": strings.Join(waypointAdmins, ","), "gatewayUrl": "http://" + pool.VIP()})
	up := func(scenario string) (string, error) {
		t.Helper()
		return upWith(ctx, t, st, scenario, map[string]string{"scenario": scenario})
	}
	carried := regexp.MustCompile(`verify: waypoint carries the gateway's traffic: \d+/20 requests seen on 2 waypoint pods after \d+\.\d s`)
	for _, sc := range []string{"02-trigger", "04-mrpc", "06-waypoint-baseline", "07-waypoint-trigger"} {
		out, err := up(sc)
		if err != nil {
			t.Fatalf("up %s: %v\n%s", sc, err, out)
		}
		if !regexp.MustCompile(`verify: scenario ` + sc + ` in effect on 2/2 gateway pods after \d+\.\d s`).MatchString(out) {
			t.Errorf("up %s does not say the scenario is in effect:\n%s", sc, out)
		}
		// The waypoint is created by the switch to 06 and left as it is by 07.
		if carried.MatchString(out) != (sc == "06-waypoint-baseline") {
			t.Errorf("up %s: the waypoint check ran %v, want only when the waypoint is created:\n%s", sc, carried.MatchString(out), out)
		}
	}

	// The filter reaches the API server and no pod: the check fails the update.
	istiod.push.Store(false)
	out, err := up("03-mcs-cap")
	if err == nil {
		t.Fatalf("up 03-mcs-cap passed with nothing pushed to the pods:\n%s", out)
	}
	msg := err.Error() + out
	t.Logf("03-mcs-cap, nothing pushed:\n%s", out[strings.Index(out, "Diagnostics:"):])
	for _, want := range append([]string{infra.ScenarioCheck, "scenario 03-mcs-cap is not in effect",
		"hcm.http2_protocol_options.max_concurrent_streams", "portNumber (80)", "workloadSelector (istio=ingressgateway)"}, pods...) {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	if got := stateStreams(t, inline, name); got != 128 {
		t.Errorf("the stack's state records max_concurrent_streams %v, want the new filter's 128", got)
	}

	if err := st.SetConfig(ctx, "igwlab:verify", "false", false); err != nil {
		t.Fatal(err)
	}
	out, err = up("05-windows")
	if err != nil || !strings.Contains(out, "verify: off (igwlab:verify is false)") {
		t.Errorf("with verify off: %v\n%s", err, out)
	}

	// The waypoint is created and the Service labelled, but the gateway's traffic goes
	// straight to the backend: the waypoint check fails the update.
	istiod.push.Store(true)
	istiod.waypoints.Store(false)
	if err := st.SetConfig(ctx, "igwlab:verify", "true", false); err != nil {
		t.Fatal(err)
	}
	out, err = up("06-waypoint-baseline")
	if err == nil {
		t.Fatalf("up 06-waypoint-baseline passed with the waypoint taking no traffic:\n%s", out)
	}
	msg = err.Error() + out
	t.Logf("06-waypoint-baseline, waypoint not in the path:\n%s", out[strings.Index(out, "Diagnostics:"):])
	for _, want := range append([]string{infra.WaypointCheck, "20 requests sent through the gateway, 0 seen on 2 waypoint pods",
		"istio.io/use-waypoint=" + infra.WaypointName, "istio.io/dataplane-mode=ambient"}, waypointPods...) {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	if err := st.Destroy(ctx, nil); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	istiod.mu.Lock()
	defer istiod.mu.Unlock()
	if istiod.err != nil {
		t.Errorf("the stand-in could not read a filter: %v", istiod.err)
	}
}

// stateStreams reads, from the stack's exported state, the EnvoyFilter's max_concurrent_streams.
func stateStreams(t *testing.T, dir, stack string) float64 {
	t.Helper()
	cmd := exec.Command("pulumi", "stack", "export", "--stack", stack)
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("pulumi stack export: %v", err)
	}
	var state struct {
		Deployment struct {
			Resources []struct {
				Type    string         `json:"type"`
				Outputs map[string]any `json:"outputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		t.Fatal(err)
	}
	for _, r := range state.Deployment.Resources {
		if r.Type != "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter" {
			continue
		}
		spec, _ := r.Outputs["spec"].(map[string]any)
		patches, _ := spec["configPatches"].([]any)
		for _, p := range patches {
			v := dig(p, "patch", "value", "typed_config", "http2_protocol_options", "max_concurrent_streams")
			if f, ok := v.(float64); ok {
				return f
			}
		}
	}
	return 0
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
