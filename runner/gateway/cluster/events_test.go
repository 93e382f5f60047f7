package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/stacks"
)

// TestClusterEventsGoThroughTheStack: on the real lab a scenario's pool and events are stack
// config and a pulumi up each: the scenario's replicas are set for the up Apply runs and put
// back after; a scale, a rolling restart (with its strategy) and a config push each set their
// key and run an up in the background, one after another; a kill deletes the oldest ready
// pod. The timeline lists every step, the pods' too (started, ready, gone), and none of
// them is reported as a disruption.
func TestClusterEventsGoThroughTheStack(t *testing.T) {
	old := cluster.PodPoll
	cluster.PodPoll = 20 * time.Millisecond
	t.Cleanup(func() { cluster.PodPoll = old })
	k := gatewaytest.NewKube(3, 1)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{configkey.Full(configkey.Scenario): "02-trigger",
		configkey.Full(configkey.Verify): "false"}}
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 5 * time.Second})
	defer c.Close()
	ctx := context.Background()
	cat, _ := stacks.Builtin()
	sc, _ := cat.MustGet("02-trigger")
	replicas := configkey.Full(configkey.GatewayReplicas)

	if err := c.SetReplicas(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, sc.Lab()); err != nil {
		t.Fatal(err)
	}
	if pods, _ := c.Pods(ctx, gateway.Gateway); len(pods) != 2 || st.Config[replicas] != "2" {
		t.Fatalf("after SetReplicas(2) and Apply: %d pods, igwlab:gatewayReplicas %q", len(pods), st.Config[replicas])
	}
	start := time.Now()
	if _, err := c.Pods(ctx, gateway.Gateway); err != nil { // the window's start
		t.Fatal(err)
	}
	zero := 0
	// The fake's updates take no time: the scale-out's pods are seen before the restart
	// replaces them. The restart's and the push's updates run one after the other.
	if err := c.Event(ctx, stacks.Event{Scale: 4}, stacks.Pool{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return count(c.Timeline(start), "ready") == 2 }, "the scale-out's two pods ready")
	for _, e := range []stacks.Event{{Restart: &stacks.Restart{MaxSurge: "1", MaxUnavailable: "0"}}, {Push: true}} {
		if err := c.Event(ctx, e, stacks.Pool{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return count(c.Timeline(start), "applied") == 3 }, "three updates applied")
	// 2 new pods at the scale-out, 4 more after the restart (the fake's pods are ready at once).
	waitFor(t, func() bool { return count(c.Timeline(start), "ready") == 6 }, "six new pods seen ready")
	if err := c.Event(ctx, stacks.Event{Kill: &zero}, stacks.Pool{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return count(c.Timeline(start), "gone") == 5 }, "the 4 pods before the restart and the killed one gone")
	for key, want := range map[string]string{replicas: "4", configkey.Full(configkey.GatewayMaxSurge): "1",
		configkey.Full(configkey.GatewayMaxUnavailable): "0", configkey.Full(configkey.GatewayPush): "1"} {
		if st.Config[key] != want {
			t.Errorf("%s = %q, want %q", key, st.Config[key], want)
		}
	}
	if _, err := time.Parse(time.RFC3339, st.Config[configkey.Full(configkey.GatewayRestartedAt)]); err != nil {
		t.Errorf("restartedAt: %v", err)
	}
	if len(st.Ups) != 4 {
		t.Errorf("%d updates, want the scenario's and one per event: %v", len(st.Ups), st.Ups)
	}
	tl := c.Timeline(start)
	var kinds []string
	for _, d := range tl {
		kinds = append(kinds, d.Kind)
	}
	t.Logf("timeline: %s", strings.Join(kinds, " "))
	if i, j := slices.Index(kinds, "restart"), slices.Index(kinds, "push"); i < 0 || j < i {
		t.Errorf("the push's update ran before the restart's: %v", kinds)
	}
	for _, kind := range []string{"scale", "restart", "push", "kill"} {
		if count(tl, kind) != 1 {
			t.Errorf("the timeline has %d %s steps, want 1", count(tl, kind), kind)
		}
	}
	if ds := c.Disruptions(start); len(ds) != 0 {
		t.Errorf("the events' pods reported as disruptions: %+v", ds)
	}

	// The next scenario names no replicas: the stack's own (unset) come back.
	if err := c.SetReplicas(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, set := st.Config[replicas]; set {
		t.Errorf("igwlab:gatewayReplicas still set to %q", st.Config[replicas])
	}
}

func count(ds []gateway.Disruption, kind string) int {
	n := 0
	for _, d := range ds {
		if d.Kind == kind {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
