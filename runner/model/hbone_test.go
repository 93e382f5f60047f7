package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

// ztunnel's pool fills one connection per key to the stream limit, then opens the next; a
// connection that reached the limit is never handed out again and closes with its last tunnel,
// while one below it stays pooled until unused for the release timeout.
func TestHBONEPoolFillsOneConnectionAtATime(t *testing.T) {
	c := HBONEPoolConfig{MaxStreamsPerConn: 3, UnusedRelease: time.Minute}
	var conns []HBONEConn
	var picks []int
	for range 7 {
		i := PickHBONE(c, conns)
		if i < 0 {
			conns = append(conns, HBONEConn{})
			i = len(conns) - 1
		}
		TakeHBONE(c, &conns[i])
		picks = append(picks, i)
	}
	want := []int{0, 0, 0, 1, 1, 1, 2}
	for i := range want {
		if picks[i] != want[i] {
			t.Fatalf("tunnels went to %v, want %v", picks, want)
		}
	}
	// Two tunnels of the first connection end: it stays retired.
	conns[0].Streams -= 2
	if i := PickHBONE(c, conns); i != 2 {
		t.Fatalf("next tunnel on %d, want the pooled connection 2 (0 is retired)", i)
	}
	now := time.Now()
	conns[0].Streams, conns[0].IdleFrom = 0, now
	conns[2].Streams, conns[2].IdleFrom = 0, now
	for _, tc := range []struct {
		i     int
		at    time.Duration
		close bool
	}{{0, 0, true}, {2, 0, false}, {2, 59 * time.Second, false}, {2, time.Minute, true}} {
		if got := ReleaseHBONE(c, conns[tc.i], now.Add(tc.at)); got != tc.close {
			t.Errorf("connection %d idle %s: release %v, want %v", tc.i, tc.at, got, tc.close)
		}
	}
}

// ztunnel picks the destination pod uniformly among the ready ones, per connection.
func TestPickEndpointIsUniformOverReady(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 4)
	for range 30000 {
		counts[PickEndpoint([]bool{true, false, true, true}, rng)]++
	}
	if counts[1] != 0 {
		t.Fatalf("picked a pod that is not ready: %v", counts)
	}
	for _, i := range []int{0, 2, 3} {
		if counts[i] < 9500 || counts[i] > 10500 {
			t.Fatalf("counts %v, want about 10000 each of the ready three", counts)
		}
	}
	if PickEndpoint([]bool{false}, rng) != -1 {
		t.Fatal("picked from none ready")
	}
}

// One task's work is serial whatever the thread count; different tasks' work runs side by
// side on as many threads as there are.
func TestRuntimeSerialisesATaskAndSpreadsTasks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, tc := range []struct {
		threads, tasks int
		end            time.Duration // when the last of 4 pieces of 1 ms per task ends
	}{{1, 1, 4 * ms}, {4, 1, 4 * ms}, {2, 2, 4 * ms}, {2, 4, 8 * ms}, {4, 4, 4 * ms}} {
		r := NewRuntime(tc.threads)
		var last time.Time
		for range 4 {
			for k := range tc.tasks {
				_, end := r.Book(t0, k, ms)
				last = latest(last, end)
			}
		}
		if got := last.Sub(t0); got != tc.end {
			t.Errorf("%d threads, %d tasks: done after %s, want %s", tc.threads, tc.tasks, got, tc.end)
		}
		var sum time.Duration
		for _, b := range r.Busy(t0.Add(time.Hour)) {
			sum += b
		}
		if sum != time.Duration(4*tc.tasks)*ms {
			t.Errorf("%d threads, %d tasks: busy %s in all", tc.threads, tc.tasks, sum)
		}
	}
}
