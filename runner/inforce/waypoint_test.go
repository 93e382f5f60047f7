package inforce_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/inforce"
)

// TestThroughWaypoint: emulated gateway pods in front of two emulated waypoint pods. With
// the waypoint off the gateway routes straight to the backend, and the check times out naming
// each waypoint pod and what it counted; once the waypoint is on, every request sent shows on
// the waypoint pods' counters.
func TestThroughWaypoint(t *testing.T) {
	p, err := emulator.Start(emulator.Config{Pods: 2, Workers: 1, WaypointPods: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	waypoints := adminsOf(t, p.Waypoints())
	send := inforce.GatewayURL("http://"+p.VIP(), "/get")
	ctx := context.Background()

	_, err = inforce.ThroughWaypoint(ctx, send, waypoints, 20, 600*time.Millisecond)
	var we *inforce.WaypointError
	if !errors.As(err, &we) {
		t.Fatalf("waypoint off: err %v, want an *inforce.WaypointError", err)
	}
	if we.Sent != 20 || we.Failed != 0 || len(we.Seen) != 2 {
		t.Errorf("waypoint off: %+v", we)
	}
	names, _ := waypoints.Pods(ctx)
	for _, n := range names {
		if !strings.Contains(err.Error(), n+": 0 requests") {
			t.Errorf("the error does not name waypoint pod %s with its count:\n%v", n, err)
		}
	}
	if !strings.Contains(err.Error(), "20 requests sent through the gateway, 0 seen on 2 waypoint pods") {
		t.Errorf("waypoint off: %v", err)
	}

	p.Apply(emulator.Setup{Waypoint: true})
	got, err := inforce.ThroughWaypoint(ctx, send, waypoints, 20, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sent != 20 || got.Seen < 20 || got.Pods != 2 {
		t.Errorf("waypoint on: %+v", got)
	}
	t.Logf("verify: waypoint carries the gateway's traffic: %d/%d requests seen on %d waypoint pods after %.1f s",
		got.Seen, got.Sent, got.Pods, got.Took.Seconds())

	// No waypoint pod at all is said as such.
	_, err = inforce.ThroughWaypoint(ctx, send, inforce.URLs(nil), 5, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no waypoint pod found") {
		t.Errorf("no waypoint pods: %v", err)
	}
}
