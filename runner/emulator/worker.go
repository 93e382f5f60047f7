package emulator

import (
	"context"
	"errors"
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
//
// Work the worker has not started yet can be dropped: when a connection closes, Envoy resets
// its streams and never spends time on them again, so the work queued behind that connection's
// goes ahead as soon as the worker is free (Drop).
type Worker struct {
	ID    int
	clock *Clock
	// quota is the pod's CPU limit (cfs.go), shared by its workers; nil: none.
	quota *cpuQuota

	mu        sync.Mutex
	busyUntil time.Time
	booked    time.Duration // all work ever booked and not dropped
	queue     []*workItem   // booked work not yet done, in the order the worker does it
	// retimed is closed, and replaced, when Drop moves queued work earlier: whoever waits for
	// a booking reads its times again.
	retimed chan struct{}

	active   atomic.Int64 // connections pinned here
	busyNs   *Stat
	cxTotal  *Stat
	cxActive *Stat
}

// workItem is one piece of booked work.
type workItem struct {
	owner      *serverConn // the connection it is for; nil for work of the pod's own
	bookedAt   time.Time   // it cannot start before it was booked
	d          time.Duration
	start, end time.Time // under Worker.mu: Drop moves them earlier
	dropped    bool
	// segs are its pieces in each CFS period, under a CPU limit (nil without one).
	segs []segment
}

func newWorker(id int, clock *Clock, quota *cpuQuota, st *Store, listenerAddr string) *Worker {
	w := &Worker{ID: id, clock: clock, quota: quota, retimed: make(chan struct{})}
	wl := Label{"worker", strconv.Itoa(id)}
	w.busyNs = emulatorStat(st, Counter, "worker_busy_ns", wl)
	w.busyNs.read = w.busyTime
	w.cxTotal = workerStat(st, Counter, listenerAddr, id, "downstream_cx_total")
	w.cxActive = workerStat(st, Gauge, listenerAddr, id, "downstream_cx_active")
	return w
}

// Booking is work queued on a worker: Wait returns when it is done, WaitStart when the worker
// takes it up.
type Booking struct {
	w  *Worker
	it *workItem
}

// errDropped is a booking's answer when its connection closed before the worker reached it.
var errDropped = errors.New("dropped: the connection closed before the worker reached it")

// Book queues d of work for owner (nil: the pod's own) and returns the booking.
func (w *Worker) Book(owner *serverConn, d time.Duration) Booking {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(now)
	start := w.busyUntil
	if start.Before(now) {
		start = now
	}
	it := &workItem{owner: owner, bookedAt: now, d: d}
	w.place(it, start)
	w.busyUntil = it.end
	w.booked += d
	if it.end.After(now) {
		w.queue = append(w.queue, it)
	}
	return Booking{w: w, it: it}
}

// pruneLocked forgets the work already done.
func (w *Worker) pruneLocked(now time.Time) {
	i := 0
	for i < len(w.queue) && !w.queue[i].end.After(now) {
		w.queue[i] = nil
		i++
	}
	w.queue = w.queue[i:]
}

// Drop forgets the work of owner the worker has not started, and moves the work queued behind
// it earlier. It returns how much work it dropped.
func (w *Worker) Drop(owner *serverConn) time.Duration {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(now)
	var freed time.Duration
	var prevEnd time.Time
	kept := w.queue[:0]
	for _, it := range w.queue {
		switch {
		case !it.start.After(now): // under way: the worker finishes it
		case it.owner == owner:
			it.dropped = true
			freed += it.d
			if w.quota != nil {
				w.quota.release(it.segs)
			}
			continue
		case freed > 0:
			s := latest(prevEnd, it.bookedAt, now)
			if s.Before(it.start) {
				if w.quota != nil {
					w.quota.release(it.segs)
				}
				w.place(it, s)
			}
		}
		kept = append(kept, it)
		prevEnd = it.end
	}
	clear(w.queue[len(kept):])
	w.queue = kept
	if freed == 0 {
		return 0
	}
	w.booked -= freed
	w.busyUntil = latest(prevEnd, now)
	close(w.retimed)
	w.retimed = make(chan struct{})
	return freed
}

// Wait waits until the booked work is done; errDropped if it was dropped first.
func (b Booking) Wait(ctx context.Context) error {
	return b.wait(ctx, func(it *workItem) time.Time { return it.end })
}

// WaitStart waits until the worker takes the booked work up.
func (b Booking) WaitStart(ctx context.Context) error {
	return b.wait(ctx, func(it *workItem) time.Time { return it.start })
}

func (b Booking) wait(ctx context.Context, at func(*workItem) time.Time) error {
	if b.it == nil {
		return ctx.Err()
	}
	for {
		b.w.mu.Lock()
		t, dropped, retimed := at(b.it), b.it.dropped, b.w.retimed
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
	return !b.it.dropped && !b.it.start.After(time.Now())
}

// place times work that can start at start: at once and for its length, or under a CPU limit
// in the pieces the CFS periods allow (w.mu held).
func (w *Worker) place(it *workItem, start time.Time) {
	if w.quota == nil {
		it.start, it.end = start, start.Add(it.d)
		return
	}
	it.segs, it.end = w.quota.place(start, it.d)
	it.start = it.end
	for _, s := range it.segs {
		if s.run > 0 {
			it.start = s.start
			break
		}
	}
}

// busyTime is the work done so far: everything booked minus what is still queued. It only
// grows, so it is a counter, and a window's busy ratio is its increase over the window's length.
// Under a CPU limit a worker is not busy while it waits for runtime.
func (w *Worker) busyTime() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.quota == nil {
		return int64(w.booked - max(0, time.Until(w.busyUntil)))
	}
	now := time.Now()
	w.pruneLocked(now)
	var ahead time.Duration
	for _, it := range w.queue {
		for _, s := range it.segs {
			ahead += min(s.run, max(0, s.start.Add(s.run).Sub(latest(now, s.start))))
		}
	}
	return int64(w.booked - ahead)
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
	return max(0, time.Until(w.busyUntil))
}

// latest is the latest of some times.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
