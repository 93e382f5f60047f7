package emulator

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Worker is one Envoy worker thread of a pod, modelled as a single server: every piece of work
// of every connection pinned to it is served one at a time, in arrival order, on a virtual
// clock. Booking work moves the worker's "busy until" forward; the caller then waits until its
// work is done. No CPU is burnt, so many pods fit on a small machine, yet a worker that is
// offered more than it can serve builds a queue exactly as a saturated thread does, while the
// pool as a whole sits idle.
type Worker struct {
	ID    int
	clock *Clock

	mu        sync.Mutex
	busyUntil time.Time
	booked    time.Duration // all work ever booked

	active   atomic.Int64 // connections pinned here
	busyNs   *Stat
	cxTotal  *Stat
	cxActive *Stat
}

func newWorker(id int, clock *Clock, st *Store, listenerAddr string) *Worker {
	w := &Worker{ID: id, clock: clock}
	wl := Label{"worker", strconv.Itoa(id)}
	w.busyNs = emulatorStat(st, Counter, "worker_busy_ns", wl)
	w.busyNs.read = w.busyTime
	w.cxTotal = workerStat(st, Counter, listenerAddr, id, "downstream_cx_total")
	w.cxActive = workerStat(st, Gauge, listenerAddr, id, "downstream_cx_active")
	return w
}

// Book queues d of work on the worker and returns when it would complete.
func (w *Worker) Book(d time.Duration) time.Time {
	now := time.Now()
	w.mu.Lock()
	start := w.busyUntil
	if start.Before(now) {
		start = now
	}
	end := start.Add(d)
	w.busyUntil = end
	w.booked += d
	w.mu.Unlock()
	return end
}

// busyTime is the work done so far: everything booked minus what is still queued. It only
// grows, so it is a counter, and a window's busy ratio is its increase over the window's length.
func (w *Worker) busyTime() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.booked - max(0, time.Until(w.busyUntil)))
}

// Busy is the worker's busy time so far (the worker_busy_ns counter).
func (w *Worker) Busy() time.Duration { return time.Duration(w.busyTime()) }

// Serve books d of work and waits until it is done.
func (w *Worker) Serve(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return w.clock.SleepUntil(ctx, w.Book(d))
}

// Booking is work booked on a worker: it starts at Start and is done at End.
type Booking struct{ Start, End time.Time }

// BookWork queues d of work on the worker and says when it starts and ends.
func (w *Worker) BookWork(d time.Duration) Booking {
	end := w.Book(d)
	return Booking{Start: end.Add(-d), End: end}
}

// Run waits for booked work: begin (when not nil) runs as the worker starts on it, then Run
// returns when it is done. Work cancelled before the worker reached it still runs begin: the
// worker would have dispatched a request's HEADERS before the reset that follows them.
func (w *Worker) Run(ctx context.Context, b Booking, begin func()) error {
	if begin != nil {
		err := w.clock.SleepUntil(ctx, b.Start)
		begin()
		if err != nil {
			return err
		}
	}
	return w.clock.SleepUntil(ctx, b.End)
}

// Backlog is how much booked work is still ahead of the worker.
func (w *Worker) Backlog() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(0, time.Until(w.busyUntil))
}
