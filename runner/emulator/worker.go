package emulator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// Worker is one Envoy worker thread of a pod: the pool's model of it (runner/model/worker.go,
// a single server booking work on a clock) on the wall clock, with goroutines that wait for
// their bookings. No CPU is burnt, so many pods fit on a small machine, yet a worker that is
// offered more than it can serve builds a queue exactly as a saturated thread does, while the
// pool as a whole sits idle.
type Worker struct {
	ID    int
	clock *Clock

	mu sync.Mutex
	q  *model.WorkerQ
	// retimed is closed, and replaced, when Drop moves queued work earlier: whoever waits for
	// a booking reads its times again.
	retimed chan struct{}

	active atomic.Int64 // connections pinned here
	*model.WorkerStats
}

func newWorker(id int, clock *Clock, quota *cpuQuota, st *Store, listenerAddr string, dispatcherStats bool) *Worker {
	w := &Worker{ID: id, clock: clock, q: model.NewWorkerQ(quota), retimed: make(chan struct{})}
	w.WorkerStats = model.NewWorkerStats(st, listenerAddr, id, w.busyTime)
	model.WatchLoop(st, id, w.q, time.Now(), dispatcherStats, time.Now, &w.mu)
	return w
}

// Booking is work queued on a worker: Wait returns when it is done, WaitStart when the worker
// takes it up.
type Booking struct {
	w  *Worker
	it *model.Item
}

// errDropped is a booking's answer when its connection closed before the worker reached it.
var errDropped = errors.New("dropped: the connection closed before the worker reached it")

// Book queues d of work for owner (nil: the pod's own) and returns the booking.
func (w *Worker) Book(owner *serverConn, d time.Duration) Booking {
	w.mu.Lock()
	defer w.mu.Unlock()
	var o any
	if owner != nil {
		o = owner
	}
	return Booking{w: w, it: w.q.Book(time.Now(), o, d, nil)}
}

// Drop forgets the work of owner the worker has not started, and moves the work queued behind
// it earlier. It returns how much work it dropped.
func (w *Worker) Drop(owner *serverConn) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	freed := w.q.Drop(time.Now(), owner)
	if freed > 0 {
		close(w.retimed)
		w.retimed = make(chan struct{})
	}
	return freed
}

// Wait waits until the booked work is done; errDropped if it was dropped first.
func (b Booking) Wait(ctx context.Context) error {
	return b.wait(ctx, func(it *model.Item) time.Time { return it.End })
}

// WaitStart waits until the worker takes the booked work up.
func (b Booking) WaitStart(ctx context.Context) error {
	return b.wait(ctx, func(it *model.Item) time.Time { return it.Start })
}

func (b Booking) wait(ctx context.Context, at func(*model.Item) time.Time) error {
	if b.it == nil {
		return ctx.Err()
	}
	for {
		b.w.mu.Lock()
		t, dropped, retimed := at(b.it), b.it.Dropped, b.w.retimed
		b.w.mu.Unlock()
		if dropped {
			return errDropped
		}
		if err := b.w.clock.sleepUntil(ctx, t, retimed); !errors.Is(err, errWoken) {
			return err
		}
	}
}

// Started reports whether the worker has taken the booked work up.
func (b Booking) Started() bool {
	if b.it == nil {
		return true
	}
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	return !b.it.Dropped && !b.it.Start.After(time.Now())
}

// busyTime is the work done so far (the model's Busy), the worker_busy_ns counter.
func (w *Worker) busyTime() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.q.Busy(time.Now()))
}

// Busy is the worker's busy time so far (the worker_busy_ns counter).
func (w *Worker) Busy() time.Duration { return time.Duration(w.busyTime()) }

// Serve books d of work for owner and waits until it is done.
func (w *Worker) Serve(ctx context.Context, owner *serverConn, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return w.Book(owner, d).Wait(ctx)
}

// Backlog is how much booked work is still ahead of the worker.
func (w *Worker) Backlog() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.q.Backlog(time.Now())
}
