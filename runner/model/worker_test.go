package model

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// TestWorkerQueuesInBookingOrder: one server, first booked first served, whoever books; busy
// time is what was done by then.
func TestWorkerQueuesInBookingOrder(t *testing.T) {
	w := NewWorkerQ(nil)
	a := w.Book(at(0), "a", 10*time.Millisecond, nil)
	b := w.Book(at(2), "b", 5*time.Millisecond, nil)
	if got := w.Backlog(at(3)); got != 12*time.Millisecond {
		t.Errorf("backlog at 3ms: %s", got)
	}
	// The clock only moves forward: busy time as it is read along the way.
	for _, tc := range []struct {
		ms   int
		want time.Duration
	}{{5, 5 * time.Millisecond}, {12, 12 * time.Millisecond}, {20, 15 * time.Millisecond}} {
		if got := w.Busy(at(tc.ms)); got != tc.want {
			t.Errorf("busy at %dms: %s, want %s", tc.ms, got, tc.want)
		}
	}
	c := w.Book(at(30), "a", 1*time.Millisecond, nil)
	if got := w.Busy(at(40)); got != 16*time.Millisecond {
		t.Errorf("busy at 40ms: %s", got)
	}
	for _, tc := range []struct {
		it         *Item
		start, end time.Time
	}{{a, at(0), at(10)}, {b, at(10), at(15)}, {c, at(30), at(31)}} {
		if !tc.it.Start.Equal(tc.start) || !tc.it.End.Equal(tc.end) {
			t.Errorf("%v: [%s, %s], want [%s, %s]", tc.it.Owner, tc.it.Start.Sub(t0), tc.it.End.Sub(t0), tc.start.Sub(t0), tc.end.Sub(t0))
		}
	}
}

// TestWorkerDropMovesLaterWorkEarlier: a closing connection's work the worker has not started is
// forgotten, and what was queued behind it starts as soon as the worker is free; work under way
// is finished.
func TestWorkerDropMovesLaterWorkEarlier(t *testing.T) {
	w := NewWorkerQ(nil)
	first := w.Book(at(0), "a", 300*time.Millisecond, nil) // under way at once
	queued := w.Book(at(0), "a", time.Second, nil)
	later := w.Book(at(0), "b", 100*time.Millisecond, nil)
	if freed := w.Drop(at(10), "a"); freed != time.Second {
		t.Fatalf("dropped %s, want the second of a's that had not started", freed)
	}
	if first.Dropped || !queued.Dropped || later.Dropped {
		t.Errorf("dropped: under way %v, queued %v, other's %v", first.Dropped, queued.Dropped, later.Dropped)
	}
	if !later.Start.Equal(at(300)) || !later.End.Equal(at(400)) {
		t.Errorf("b's work [%s, %s], want [300ms, 400ms]", later.Start.Sub(t0), later.End.Sub(t0))
	}
	if len(w.Pending()) != 2 || w.Busy(at(500)) != 400*time.Millisecond {
		t.Errorf("pending %d, busy %s", len(w.Pending()), w.Busy(at(500)))
	}
}

// TestDroppedWorkGivesRuntimeBack: under a CPU limit, work a closed connection leaves behind
// gives its runtime back: what is queued behind it runs in its place, within the same periods.
func TestDroppedWorkGivesRuntimeBack(t *testing.T) {
	q := NewQuota(1000, 1000, t0)
	w := NewWorkerQ(q)
	w.Book(at(0), nil, 10*time.Millisecond, nil) // busy with something else first
	a := w.Book(at(0), "gone", 150*time.Millisecond, nil)
	b := w.Book(at(0), nil, 20*time.Millisecond, nil)
	if !b.End.After(a.End) {
		t.Fatalf("work booked second ends %s before the first", a.End.Sub(b.End))
	}
	if freed := w.Drop(at(5), "gone"); freed != 150*time.Millisecond {
		t.Fatalf("dropped %s, want 150ms", freed)
	}
	if !b.End.Equal(at(30)) {
		t.Fatalf("the work behind the dropped one ends at %s, want 30ms", b.End.Sub(t0))
	}
	var used time.Duration
	for _, p := range q.periods {
		used += p.used
	}
	if used != 30*time.Millisecond {
		t.Fatalf("the ledger holds %s of runtime, want the 30ms still booked", used)
	}
}

// TestQuotaThrottlesPastTheLimit: a limit of 1 core spent by two workers at once: every period
// after the first 100 ms of runtime is throttled, each worker waits for the next period, and the
// counters are cAdvisor's.
func TestQuotaThrottlesPastTheLimit(t *testing.T) {
	q := NewQuota(1000, 1000, t0)
	a, b := NewWorkerQ(q), NewWorkerQ(q)
	x := a.Book(at(0), "x", 80*time.Millisecond, nil)
	y := b.Book(at(0), "y", 80*time.Millisecond, nil)
	if !x.End.Equal(at(80)) {
		t.Errorf("the first booking ends at %s", x.End.Sub(t0))
	}
	// y runs 20 ms in the first period, waits for the second, runs 60 ms there.
	if !y.Start.Equal(at(0)) || !y.End.Equal(at(160)) {
		t.Errorf("the second booking [%s, %s], want [0, 160ms]", y.Start.Sub(t0), y.End.Sub(t0))
	}
	st := q.Stats(at(250))
	if st.Periods != 2 || st.Throttled != 1 || st.ThrottledTime != 80*time.Millisecond {
		t.Errorf("stats %+v, want 2 periods, 1 throttled, 80ms", st)
	}
	if busy := b.Busy(at(50)); busy != 20*time.Millisecond {
		t.Errorf("a worker waiting for runtime counts as busy: %s", busy)
	}
}
