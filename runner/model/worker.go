package model

import "time"

// WorkerQ is one Envoy worker thread as a single server: every piece of work of every
// connection pinned to it is served one at a time, in booking order, on a clock the caller
// gives. Booking work moves the worker's "busy until" forward; the work is done at its End. No
// CPU is burnt, so many pods fit on a small machine, yet a worker offered more than it can
// serve builds a queue exactly as a saturated thread does, while the pool as a whole sits idle
// (Envoy runs each connection's events on the worker its listener handed it to, one event
// loop per worker: source/server/worker_impl.cc, source/common/event/dispatcher_impl.cc).
//
// Work the worker has not started yet can be dropped: when a connection closes, Envoy resets
// its streams and never spends time on them again, so the work queued behind that connection's
// goes ahead as soon as the worker is free (Drop).
//
// A WorkerQ is not safe for concurrent use: the socket emulator holds its worker's lock around
// it, the simulator runs on one goroutine.
type WorkerQ struct {
	// quota is the pod's CPU limit, shared by its workers; nil: none.
	quota     *Quota
	busyUntil time.Time
	booked    time.Duration // all work ever booked and not dropped
	queue     []*Item       // booked work not yet done, in the order the worker does it
	// loop, when set, is told of each piece of work as it is done (the worker's own signals).
	loop *EventLoop
}

// Item is one piece of booked work.
type Item struct {
	Owner    any       // the connection it is for; nil for work of the pod's own (never dropped)
	BookedAt time.Time // it cannot start before it was booked
	D        time.Duration
	// Start and End are when the worker takes it up and finishes it; Drop may move them earlier.
	Start, End time.Time
	Dropped    bool
	// Tag is the caller's: what to do when the work is done (the simulator's continuation,
	// run again at the new End when a Drop moves the work earlier).
	Tag any
	// segs are its pieces in each CFS period, under a CPU limit (nil without one).
	segs []Segment
}

// NewWorkerQ is an idle worker under quota (nil: no CPU limit).
func NewWorkerQ(quota *Quota) *WorkerQ { return &WorkerQ{quota: quota} }

// Book queues d of work for owner as of now and returns it, timed. it, when not nil, is filled
// in instead of a new Item (a caller that reuses its memory).
func (w *WorkerQ) Book(now time.Time, owner any, d time.Duration, it *Item) *Item {
	w.prune(now)
	start := w.busyUntil
	if start.Before(now) {
		start = now
	}
	if it == nil {
		it = &Item{}
	}
	*it = Item{Owner: owner, BookedAt: now, D: d}
	w.place(now, it, start)
	w.busyUntil = it.End
	w.booked += d
	if it.End.After(now) {
		w.queue = append(w.queue, it)
	}
	return it
}

// SetLoop makes loop follow the work this worker does.
func (w *WorkerQ) SetLoop(loop *EventLoop) { w.loop = loop }

// prune forgets the work already done.
func (w *WorkerQ) prune(now time.Time) {
	i := 0
	for i < len(w.queue) && !w.queue[i].End.After(now) {
		if w.loop != nil {
			w.loop.Done(w.queue[i])
		}
		w.queue[i] = nil
		i++
	}
	w.queue = w.queue[i:]
}

// Drop forgets the work of owner the worker has not started as of now, and moves the work
// queued behind it earlier. It returns how much work it dropped; when some was, Pending lists
// the work whose times may have moved.
func (w *WorkerQ) Drop(now time.Time, owner any) time.Duration {
	w.prune(now)
	var freed time.Duration
	var prevEnd time.Time
	kept := w.queue[:0]
	for _, it := range w.queue {
		switch {
		case !it.Start.After(now): // under way: the worker finishes it
		case it.Owner == owner:
			it.Dropped = true
			freed += it.D
			if w.quota != nil {
				w.quota.Release(it.segs)
			}
			continue
		case freed > 0:
			s := latest(prevEnd, it.BookedAt, now)
			if s.Before(it.Start) {
				if w.quota != nil {
					w.quota.Release(it.segs)
				}
				w.place(now, it, s)
			}
		}
		kept = append(kept, it)
		prevEnd = it.End
	}
	clear(w.queue[len(kept):])
	w.queue = kept
	if freed == 0 {
		return 0
	}
	w.booked -= freed
	w.busyUntil = latest(prevEnd, now)
	return freed
}

// LoopAt brings the worker's event loop up to now and returns it with the work under way (nil:
// none), for reading its signals; nil without a loop.
func (w *WorkerQ) LoopAt(now time.Time) (*EventLoop, *Item) {
	if w.loop == nil {
		return nil, nil
	}
	w.prune(now)
	var next, running *Item
	if len(w.queue) > 0 {
		next = w.queue[0]
		if !next.Start.After(now) {
			running = next
		}
	}
	w.loop.Advance(now, next)
	return w.loop, running
}

// Pending is the booked work not yet done, in the order the worker does it.
func (w *WorkerQ) Pending() []*Item { return w.queue }

// place times work that can start at start: at once and for its length, or under a CPU limit
// in the pieces the CFS periods allow.
func (w *WorkerQ) place(now time.Time, it *Item, start time.Time) {
	if w.quota == nil {
		it.Start, it.End = start, start.Add(it.D)
		return
	}
	it.segs, it.End = w.quota.Place(now, start, it.D)
	it.Start = it.End
	for _, s := range it.segs {
		if s.Run > 0 {
			it.Start = s.Start
			break
		}
	}
}

// Busy is the work done by now: everything booked minus what is still queued. It only grows,
// so it is a counter (Envoy-side it is the worker's CPU time), and a window's busy ratio is its
// increase over the window's length. Under a CPU limit a worker is not busy while it waits for
// runtime.
func (w *WorkerQ) Busy(now time.Time) time.Duration {
	if w.quota == nil {
		return w.booked - max(0, w.busyUntil.Sub(now))
	}
	w.prune(now)
	var ahead time.Duration
	for _, it := range w.queue {
		for _, s := range it.segs {
			ahead += min(s.Run, max(0, s.Start.Add(s.Run).Sub(latest(now, s.Start))))
		}
	}
	return w.booked - ahead
}

// Backlog is how much booked work is still ahead of the worker as of now.
func (w *WorkerQ) Backlog(now time.Time) time.Duration { return max(0, w.busyUntil.Sub(now)) }

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
