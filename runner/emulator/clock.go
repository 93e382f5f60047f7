package emulator

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Clock wakes goroutines at virtual-clock deadlines with sub-millisecond precision.
//
// A worker's busy time is kept on a virtual clock: a request's completion time is computed,
// not burnt on a CPU. The request must then wait until that time. Go's timers round a sleep
// up to the next millisecond whenever the process has nothing else to do (the scheduler then
// waits in epoll with a timeout in whole milliseconds), which would add up to a millisecond to
// every emulated request. So the clock keeps all deadlines in one heap and waits for the
// earliest on a timer the network poller watches (a timerfd on Linux, precise to
// microseconds): the waiting goroutine holds no OS thread and no P, and wakes everyone due.
type Clock struct {
	mu    sync.Mutex
	q     waitHeap
	once  sync.Once
	armed time.Time // deadline the timer is set for; zero when disarmed
	t     alarm
	// lead is how late waiters wake on average (the poller's and the scheduler's wake-up
	// latency, tens of microseconds on a VM). The clock fires that much early, so waiters resume
	// on time on average; it is learnt from what the waiters observe.
	lead atomic.Int64
}

const maxLead = 200 * time.Microsecond

// alarm is a one-shot timer that a goroutine can wait on.
type alarm interface {
	// set arms the alarm to fire after d (d > 0).
	set(d time.Duration)
	// wait blocks until the alarm fires or the alarm is closed.
	wait() error
	close()
}

const clockSlop = 20 * time.Microsecond // release waiters this close to their deadline

type waiter struct {
	at time.Time
	ch chan struct{}
}

type waitHeap []waiter

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)        { *h = append(*h, x.(waiter)) }
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

var chanPool = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// NewClock starts a clock. Close stops it.
func NewClock() *Clock {
	c := &Clock{t: newAlarm()}
	go c.loop()
	return c
}

// Close stops the clock; waiters still queued are released.
func (c *Clock) Close() {
	c.once.Do(c.t.close)
}

// SleepUntil blocks until t (or ctx ends). It returns ctx.Err() if ctx ended first.
func (c *Clock) SleepUntil(ctx context.Context, t time.Time) error {
	return c.sleepUntil(ctx, t, nil)
}

// errWoken is sleepUntil's answer when its wake channel closed before the deadline.
var errWoken = errors.New("woken before the deadline")

// sleepUntil is SleepUntil that also returns errWoken as soon as wake is closed (a nil wake
// never is).
func (c *Clock) sleepUntil(ctx context.Context, t time.Time, wake <-chan struct{}) error {
	if time.Until(t) <= clockSlop {
		return ctx.Err()
	}
	ch := chanPool.Get().(chan struct{})
	c.mu.Lock()
	heap.Push(&c.q, waiter{at: t, ch: ch})
	if c.armed.IsZero() || t.Before(c.armed) {
		// The loop waits for a later deadline (or none): bring the alarm forward.
		c.armed = t
		c.t.set(max(time.Until(t)-c.leadTime(), time.Microsecond))
	}
	c.mu.Unlock()
	select {
	case <-ch:
		chanPool.Put(ch)
		c.learn(time.Since(t))
		return nil
	case <-ctx.Done():
		// The clock will still send on ch; it is buffered, so the send never blocks, and the
		// channel is simply not reused.
		return ctx.Err()
	case <-wake:
		return errWoken
	}
}

// loop waits for the alarm and releases every waiter that is due, then sets the alarm for
// the next deadline. SleepUntil brings the alarm forward when it queues an earlier one.
func (c *Clock) loop() {
	for {
		if err := c.t.wait(); err != nil {
			c.drain()
			return
		}
		c.mu.Lock()
		now := time.Now()
		lead := c.leadTime()
		for len(c.q) > 0 && !c.q[0].at.After(now.Add(clockSlop+lead)) {
			w := heap.Pop(&c.q).(waiter)
			w.ch <- struct{}{}
		}
		c.armed = time.Time{}
		if len(c.q) > 0 {
			c.armed = c.q[0].at
			c.t.set(max(c.q[0].at.Sub(now)-lead, time.Microsecond))
		}
		c.mu.Unlock()
	}
}

func (c *Clock) leadTime() time.Duration { return time.Duration(c.lead.Load()) }

// learn folds one waiter's lateness (negative when early) into the lead, as a moving average.
func (c *Clock) learn(late time.Duration) {
	for {
		old := c.lead.Load()
		nu := old + (int64(late)-0)/16
		nu = min(max(nu, 0), int64(maxLead))
		if c.lead.CompareAndSwap(old, nu) {
			return
		}
	}
}

func (c *Clock) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.q) > 0 {
		w := heap.Pop(&c.q).(waiter)
		w.ch <- struct{}{}
	}
}
