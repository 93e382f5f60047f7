package emulator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/stacks"
)

// eastWestPool is a pool with three waypoint pods of two workers and an east-west setup in
// force.
func eastWestPool(t *testing.T, ew stacks.EastWest, k stacks.Knobs) *Pool {
	t.Helper()
	p, err := Start(Config{Pods: 1, Workers: 1, WaypointPods: 3, WaypointWorkers: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.ApplyEastWest(Setup{Knobs: k}, ew); err != nil {
		t.Fatal(err)
	}
	return p
}

// runClients runs one h2dial per client pod, side by side.
func runClients(t *testing.T, p *Pool, n int, o h2dial.Options) []*h2dial.Result {
	t.Helper()
	pods, err := p.ClientPods(n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*h2dial.Result, n)
	errs := make(chan error, n)
	for i, cp := range pods {
		go func() {
			oo := o
			oo.URL = "http://" + cp.Addr + o.URL
			r, err := h2dial.Run(context.Background(), oo)
			out[i] = r
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// hboneCx counts a waypoint pod's HBONE connections and the tunnels its connection manager
// served.
func hboneCx(t *testing.T, p *Pod) (hbone, tunnels int64) {
	return statValue(t, p, "http.connect_terminate;.downstream_cx_total"), statValue(t, p, hcmName(p, "downstream_cx_total"))
}

// Two client pods with one connection each: ztunnel opens one tunnel per connection, to a
// waypoint pod picked for it, on one HBONE connection per client pod and waypoint pod; the
// requests land on at most two of the three waypoint pods, each on the worker its HBONE
// connection was accepted on.
func TestEastWestTunnelsFollowClientConnections(t *testing.T) {
	p := eastWestPool(t, stacks.EastWest{Clients: 2}, stacks.Knobs{})
	rs := runClients(t, p, 2, h2dial.Options{URL: "/get", Mode: h2dial.Shared, Concurrency: 20, Duration: 500 * time.Millisecond})
	var hbone, tunnels, busyPods int64
	for _, wp := range p.Waypoints() {
		h, tn := hboneCx(t, wp)
		hbone += h
		tunnels += tn
		rq := statValue(t, wp, hcmName(wp, "downstream_rq_total"))
		if rq > 0 {
			busyPods++
		}
		// Every request of a pod ran on the workers its HBONE connections are on.
		for _, w := range wp.Workers() {
			if w.Busy() > 0 && statValue(t, wp, fmt.Sprintf("listener.%s.worker_%d.downstream_cx_total", wp.listenerAddr, w.ID)) == 0 {
				t.Errorf("pod %s worker %d worked without an HBONE connection", wp.Name, w.ID)
			}
		}
	}
	for i, r := range rs {
		if r.Requests == 0 || r.Errors > 0 || r.ConnectionsOpened != 1 {
			t.Fatalf("client pod %d: %d requests, %d errors, %d connections", i, r.Requests, r.Errors, r.ConnectionsOpened)
		}
	}
	if hbone != 2 || tunnels != 2 || busyPods > 2 || busyPods == 0 {
		t.Fatalf("HBONE connections %d, tunnels %d, waypoint pods with requests %d; want 2, 2, 1..2", hbone, tunnels, busyPods)
	}
}

// One client pod dialling 30 connections: 30 tunnels over three waypoint pods picked at
// random, but only one HBONE connection per waypoint pod while each carries fewer than the
// pool's 100 streams; with the pool capped at 4 streams a connection, ztunnel opens more.
func TestEastWestPoolOpensConnectionsAtItsStreamLimit(t *testing.T) {
	for _, tc := range []struct {
		maxStreams int
		min, max   int64
	}{{0, 1, 3}, {4, 8, 12}} {
		t.Run(fmt.Sprint(tc.maxStreams), func(t *testing.T) {
			p := eastWestPool(t, stacks.EastWest{Clients: 1, Ztunnel: stacks.Ztunnel{PoolMaxStreamsPerConn: tc.maxStreams}}, stacks.Knobs{})
			// 1 s, not 400 ms: the test counts tunnels, not requests, and a loaded CI machine
			// once left 8 of the 30 dials unopened within 400 ms (tunnels 22).
			runClients(t, p, 1, h2dial.Options{URL: "/get", Mode: h2dial.Distinct, Concurrency: 30, Duration: time.Second})
			var hbone, tunnels int64
			for _, wp := range p.Waypoints() {
				h, tn := hboneCx(t, wp)
				hbone += h
				tunnels += tn
			}
			if tunnels != 30 || hbone < tc.min || hbone > tc.max {
				t.Fatalf("tunnels %d, HBONE connections %d; want 30 and %d..%d", tunnels, hbone, tc.min, tc.max)
			}
		})
	}
}
