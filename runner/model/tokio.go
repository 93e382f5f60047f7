package model

import "time"

// Runtime is ztunnel's tokio multi-thread runtime as a set of worker threads on a clock:
// ztunnel runs its proxy on a runtime of a fixed number of worker threads (two until
// istio/ztunnel#1993; since then the CPU it is given), and tokio's scheduler lets an idle
// thread steal queued tasks from a busy one (tokio/src/runtime/scheduler/multi_thread/worker.rs,
// Core::steal_work), so work goes to whichever thread is free first. What it cannot split is a
// task: a task is polled by one thread at a time, and an HTTP/2 connection's frames are all
// read, written and encrypted by the one task that drives it (h2's Connection future, which
// ztunnel spawns per HBONE connection: src/proxy/h2/client.rs). So a connection's work is
// serial, whatever the thread count, while different connections' work spreads over threads.
//
// Book places a piece of a task's work on the thread free first, no earlier than the task's
// previous piece ended. Like WorkerQ it burns no CPU and is not safe for concurrent use.
type Runtime struct {
	free  []time.Time     // when each thread is next free
	busy  []time.Duration // work each thread has taken up, in all
	tasks map[any]time.Time
}

// NewRuntime is a runtime of n worker threads (n >= 1).
func NewRuntime(n int) *Runtime {
	n = max(n, 1)
	return &Runtime{free: make([]time.Time, n), busy: make([]time.Duration, n), tasks: map[any]time.Time{}}
}

// Threads is the runtime's worker count.
func (r *Runtime) Threads() int { return len(r.free) }

// Book queues d of task's work as of now and returns the thread that runs it and when it
// ends.
func (r *Runtime) Book(now time.Time, task any, d time.Duration) (thread int, end time.Time) {
	ready := now
	if t, ok := r.tasks[task]; ok && t.After(ready) {
		ready = t
	}
	// The thread that can start it first: an idle one steals it at once, else the one that
	// frees up first. Ties go to the lowest index, as a woken task lands on the thread that
	// woke it and only spills when that one is busy.
	best, bestStart := 0, time.Time{}
	for i, f := range r.free {
		s := latest(f, ready)
		if i == 0 || s.Before(bestStart) {
			best, bestStart = i, s
		}
	}
	end = bestStart.Add(d)
	r.free[best] = end
	r.busy[best] += d
	r.tasks[task] = end
	return best, end
}

// Forget drops a finished task (a closed connection).
func (r *Runtime) Forget(task any) { delete(r.tasks, task) }

// Busy is each thread's work done by now: what it took up minus what is still ahead of it.
func (r *Runtime) Busy(now time.Time) []time.Duration {
	out := make([]time.Duration, len(r.busy))
	for i, b := range r.busy {
		out[i] = b - max(0, r.free[i].Sub(now))
	}
	return out
}
