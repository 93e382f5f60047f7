package model

import "time"

// EventLoop is a worker's event loop as Envoy's dispatcher runs it, rebuilt from the work the
// model books on the worker, for the two signals a real worker gives of itself: the guard dog's
// watchdog misses (always on) and, with the bootstrap's enable_dispatcher_stats, the
// dispatcher's loop_duration_us and poll_delay_us histograms.
//
// Each piece of booked work is one callback of the loop: Envoy touches the thread's watchdog as
// each file event, timer, posted or deferred callback starts (DispatcherImpl::createFileEvent,
// createTimerInternal, runPostCallbacks, clearDeferredDeleteList call touchWatchdog), and a
// touch timer every half guard-dog interval keeps an idle loop touched (WatchDogImpl,
// GuardDogImpl::createWatchDog: loop_interval_ / 2).
//
// A loop iteration runs every event that was ready when the poll returned: libevent's
// event_base_loop polls, then runs all the active callbacks, then polls again, so data that
// arrives while the callbacks run waits for the next iteration (and a connection's read event
// takes everything its socket holds: RawBufferSocket::doRead reads until EAGAIN or the buffer
// limit, ConnectionImpl::onRead dispatches all of it). Work booked before the iteration's poll
// returned is its work; work booked after is the next iteration's. So a saturated worker's
// iterations grow with its backlog, which is what loop_duration_us shows.
//
// The stats as LibeventScheduler computes them (source/common/event/libevent_scheduler.cc):
// onPrepareForStats records loop_duration_us = this prepare - the last check (the time the
// iteration's callbacks took); onCheckForStats records poll_delay_us = (check - prepare) - the
// poll timeout, only when a timeout was set and the delay is not negative ("Delay can be
// negative, meaning polling completed early ... Disregard negative delays"). The timeout is
// the time to the loop's earliest timer; the model knows the watchdog's touch timer (every
// worker has it; the connection timers Envoy arms are minutes out by default). libevent's epoll
// backend waits in whole milliseconds, rounded up (epoll.c epoll_dispatch,
// evutil_tv_to_msec_), unless EVENT_BASE_FLAG_PRECISE_TIMER is set, which Envoy's
// LibeventScheduler (event_base_new) does not: a timer wake is up to a millisecond late. A
// wake by I/O before the timer is early, so it records nothing; a saturated worker polls
// with its touch timer overdue (timeout 0) and I/O ready, so it records zero delays. Poll
// delay therefore shows the kernel and the CPU limit holding a thread back, not a busy loop.
// The kernel's own timer slack is not modelled.
//
// Not safe for concurrent use: its worker's owner serialises it, as the WorkerQ.
type EventLoop struct {
	step         time.Duration // the guard dog's loop interval: it checks every thread this often
	epoch        time.Time     // the guard dog's first step
	kMiss, kMega int64         // steps without a touch that make a miss, a mega miss (the timeouts in steps)

	// Dispatcher stats, nil when enable_dispatcher_stats is off.
	loopDuration, pollDelay *Stat

	inIter             bool
	iterStart, iterEnd time.Time // the open iteration's check time and the end of its work
	prep               time.Time // the last prepare: when the loop last went to poll
	nextTouch          time.Time // the watchdog touch timer's deadline
	misses, megaMisses int64     // from callbacks done
}

// Envoy's guard dog defaults (envoy.config.bootstrap.v3.Watchdog: miss_timeout 200ms,
// megamiss_timeout 1s; kill and multikill are off). Istio's bootstrap sets no watchdog, so a
// gateway runs these.
const (
	DefaultWatchdogMiss     = 200 * time.Millisecond
	DefaultWatchdogMegaMiss = time.Second
)

// NewEventLoop is the loop of a worker started at start, with the guard dog's miss and mega
// miss timeouts (0: Envoy's defaults); loopDuration and pollDelay are the dispatcher's
// histograms (nil: dispatcher stats off).
func NewEventLoop(start time.Time, miss, megaMiss time.Duration, loopDuration, pollDelay *Stat) *EventLoop {
	if miss <= 0 {
		miss = DefaultWatchdogMiss
	}
	if megaMiss <= 0 {
		megaMiss = DefaultWatchdogMegaMiss
	}
	// GuardDogImpl: loop_interval_ is the smallest timeout set (kill and multikill off).
	step := min(miss, megaMiss)
	return &EventLoop{step: step, epoch: start,
		kMiss: ceilDiv(miss, step), kMega: ceilDiv(megaMiss, step),
		loopDuration: loopDuration, pollDelay: pollDelay,
		prep: start, nextTouch: start.Add(step / 2)}
}

func ceilDiv(a, b time.Duration) int64 { return int64((a + b - 1) / b) }

// TouchInterval is how often the watchdog's touch timer fires on an idle loop.
func (l *EventLoop) TouchInterval() time.Duration { return l.step / 2 }

// Done takes one piece of work the worker has finished, in the order the worker did them.
func (l *EventLoop) Done(it *Item) {
	l.misses, l.megaMisses = l.misses+l.callbackMisses(it.Start, it.End, 1), l.megaMisses+l.callbackMisses(it.Start, it.End, 2)
	if l.loopDuration == nil {
		return
	}
	if l.inIter && !it.BookedAt.After(l.iterStart) {
		l.iterEnd = latest(l.iterEnd, it.End) // ready when this iteration's poll returned
		return
	}
	if l.inIter {
		l.closeIter()
	}
	l.timerWakes(it.BookedAt)
	// The poll returns for this work; the thread runs when the work starts (later only while a
	// CPU limit holds the pod back).
	l.wake(it.Start)
	l.iterEnd = latest(l.iterEnd, it.End)
}

// Advance brings the loop up to now when next (the first work still queued, nil: none) is not
// part of the open iteration: it closes the iteration once its work is done and runs the touch
// timer's iterations of an idle loop, so an idle worker's stats move as Envoy's do.
func (l *EventLoop) Advance(now time.Time, next *Item) {
	if l.loopDuration == nil {
		return
	}
	if l.inIter {
		if next != nil && !next.BookedAt.After(l.iterStart) || l.iterEnd.After(now) {
			return
		}
		l.closeIter()
	}
	limit := now
	if next != nil && next.BookedAt.Before(limit) {
		limit = next.BookedAt
	}
	l.timerWakes(limit)
}

// closeIter ends the open iteration: the loop prepares to poll again.
func (l *EventLoop) closeIter() {
	l.loopDuration.Observe(float64(l.iterEnd.Sub(l.iterStart).Microseconds()))
	l.prep, l.inIter = l.iterEnd, false
}

// wake opens an iteration at c, the poll having waited since the last prepare.
func (l *EventLoop) wake(c time.Time) {
	timeout := max(0, l.nextTouch.Sub(l.prep))
	if delay := c.Sub(l.prep) - timeout; delay >= 0 {
		l.pollDelay.Observe(float64(delay.Microseconds()))
	}
	l.inIter, l.iterStart, l.iterEnd = true, c, c
	if !l.nextTouch.After(c) {
		l.nextTouch = c.Add(l.TouchInterval()) // the touch timer runs and arms itself again
	}
}

// timerWakes runs the touch timer's iterations of a loop polling with nothing to read, up to
// limit (when I/O would wake it first): each wakes when the whole-millisecond poll ends, does
// its (negligible) work and polls again.
func (l *EventLoop) timerWakes(limit time.Time) {
	for {
		timeout := max(0, l.nextTouch.Sub(l.prep))
		c := l.prep.Add((timeout + time.Millisecond - 1).Truncate(time.Millisecond))
		if c.After(limit) {
			return
		}
		l.wake(c)
		l.closeIter()
	}
}

// callbackMisses counts the misses (level 1) or mega misses (level 2) the guard dog sees for
// one callback run from a to b. GuardDogImpl::step runs every loop interval from the start: a
// thread touched since the last step checks in at this step; one not touched is late by now -
// its last check-in, and past miss_timeout (megamiss_timeout) counts one miss (mega miss),
// once until it checks in again. A callback's touch at a checks in at the first step at or
// after a; the next touch comes as the callback ends (an overdue touch timer or the next
// callback), so the steps strictly inside count. Successive steps are a little more than the
// interval apart (the guard dog's timer is armed again after each step), so k steps after a
// check-in the lateness passes k intervals.
func (l *EventLoop) callbackMisses(a, b time.Time, level int) int64 {
	k := l.kMiss
	if level == 2 {
		k = l.kMega
	}
	n0 := ceilDiv(a.Sub(l.epoch), l.step)
	checkin := l.epoch.Add(time.Duration(n0) * l.step)
	if b.After(checkin.Add(time.Duration(k) * l.step)) {
		return 1
	}
	return 0
}

// Misses are the watchdog_miss and watchdog_mega_miss counts as of now, running being the
// callback under way (nil: none).
func (l *EventLoop) Misses(now time.Time, running *Item) (miss, megaMiss int64) {
	miss, megaMiss = l.misses, l.megaMisses
	if running != nil && !running.Start.After(now) {
		miss += l.callbackMisses(running.Start, now, 1)
		megaMiss += l.callbackMisses(running.Start, now, 2)
	}
	return miss, megaMiss
}
