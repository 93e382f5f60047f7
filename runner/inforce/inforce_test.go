package inforce_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/stacks"
)

// pool starts emulated gateway pods on loopback and returns their admins as URLs.
func pool(t *testing.T, pods, workers int, drain time.Duration) (*emulator.Pool, inforce.URLs) {
	t.Helper()
	p, err := emulator.Start(emulator.Config{Pods: pods, Workers: workers, ListenerDrainTime: drain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, adminsOf(t, p.Pods())
}

// adminsOf is the emulated pods' admins as a pool of URLs.
func adminsOf(t *testing.T, pods []*emulator.Pod) inforce.URLs {
	t.Helper()
	var urls []string
	for _, pod := range pods {
		urls = append(urls, pod.AdminURL())
	}
	u, err := inforce.ParseURLs(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mrpc(t *testing.T, v string) stacks.Knobs {
	t.Helper()
	var k stacks.Knobs
	spec, ok := stacks.Lookup("hcm.common_http_protocol_options.max_requests_per_connection")
	if !ok {
		t.Fatal("no max_requests_per_connection knob")
	}
	if err := spec.Set(&k, v); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestWaitSeesKnobsAndDrainOnEveryPod: the knobs must show on every pod's /config_dump and
// the listener drain the change started must be over; a change the pods never got times out
// with each pod and the field it lacks.
func TestWaitSeesKnobsAndDrainOnEveryPod(t *testing.T) {
	p, urls := pool(t, 2, 1, 300*time.Millisecond)
	k := mrpc(t, "1000")
	ctx := context.Background()

	_, err := inforce.Wait(ctx, urls, inforce.Want{Knobs: k, Drained: true, Pods: 2}, 600*time.Millisecond)
	var ie *inforce.Error
	if !errors.As(err, &ie) {
		t.Fatalf("knobs never applied: err %v, want an *inforce.Error", err)
	}
	if len(ie.Pending) != 2 || !slices.Equal(ie.Fields(), []string{"hcm.common_http_protocol_options.max_requests_per_connection"}) {
		t.Errorf("pending %+v, fields %v", ie.Pending, ie.Fields())
	}
	names, _ := urls.Pods(ctx)
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("the error does not name pod %s:\n%v", n, err)
		}
	}

	p.Apply(emulator.Setup{Knobs: k})
	res, err := inforce.Wait(ctx, urls, inforce.Want{Knobs: k, Drained: true, Pods: 2}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The emulated listener drains for 300 ms after the change, and Wait waits it out.
	if res.Pods != 2 || res.Took < 200*time.Millisecond {
		t.Errorf("result %+v: want 2 pods, after the drain", res)
	}
}

// TestWaitChecksWorkersAndStats: the worker count from /server_info and the per-worker stats;
// a wrong pod count is named as such.
func TestWaitChecksWorkersAndStats(t *testing.T) {
	_, urls := pool(t, 2, 3, 0)
	ctx := context.Background()
	if _, err := inforce.Wait(ctx, urls, inforce.Want{Concurrency: 3, WorkerStats: true, Pods: 2}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := inforce.Wait(ctx, urls, inforce.Want{Concurrency: 2}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "concurrency=2 (server_info: 3)") {
		t.Errorf("wrong worker count: %v", err)
	}
	_, err = inforce.Wait(ctx, urls, inforce.Want{Pods: 6}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "2 gateway pods found, 6 expected") {
		t.Errorf("wrong pod count: %v", err)
	}
}

func TestParseURLs(t *testing.T) {
	for _, c := range []struct {
		in, err string
		n       int
	}{
		{"http://127.0.0.1:15000", "", 1},
		{"http://127.0.0.1:15000/, http://127.0.0.1:15001", "", 2},
		{"127.0.0.1:15000", "not an admin base URL", 0},
		{"http://127.0.0.1:15000/stats", "not an admin base URL", 0},
	} {
		u, err := inforce.ParseURLs(c.in)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) || len(u) != c.n {
			t.Errorf("%q: %v %v", c.in, u, err)
		}
	}
}

// TestWaitSeesPushRestartAndReadiness: a config push is in force once every pod's
// /config_dump carries its generation, and Wait then waits out the drain it started; a
// restart is complete once every pod's Envoy started after it (server_info's uptime); a pod
// terminating is not ready.
func TestWaitSeesPushRestartAndReadiness(t *testing.T) {
	p, urls := pool(t, 2, 1, 300*time.Millisecond)
	ctx := context.Background()
	_, err := inforce.Wait(ctx, urls, inforce.Want{Push: 1, Drained: true, Pods: 2}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "config push 1 not in force (config_dump: tracing tag igwlab.push=0)") {
		t.Errorf("a push no pod got: %v", err)
	}
	p.Apply(emulator.Setup{Push: 1})
	res, err := inforce.Wait(ctx, urls, inforce.Want{Push: 1, Drained: true, Pods: 2}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Took < 200*time.Millisecond {
		t.Errorf("the push's drain was not waited for: %+v", res)
	}

	_, err = inforce.Wait(ctx, urls, inforce.Want{StartedAfter: time.Now().Add(time.Hour)}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "an old pod still serves") {
		t.Errorf("pods older than the restart: %v", err)
	}
	restart := time.Now()
	for i := range 2 {
		if err := p.KillPod(i); err != nil {
			t.Fatal(err)
		}
		if err := p.RestartPod(i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := inforce.Wait(ctx, urls, inforce.Want{StartedAfter: restart, Live: true, Pods: 2}, 10*time.Second); err != nil {
		t.Errorf("every pod restarted: %v", err)
	}

	if err := p.ScaleTo(1, emulator.Lifecycle{TerminationDrain: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_, err = inforce.Wait(ctx, urls, inforce.Want{Live: true}, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("a terminating pod read as ready: %v", err)
	}
}
