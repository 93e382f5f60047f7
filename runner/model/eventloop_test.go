package model

import (
	"testing"
	"time"
)

func ms(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Millisecond))) }

// A callback the guard dog sees through: a miss when a whole guard-dog interval passes with no
// touch, a mega miss after five (1 s at the 200 ms interval), once per stall
// (GuardDogImpl::step), whatever else the worker does.
func TestWatchdogMisses(t *testing.T) {
	for _, c := range []struct {
		name           string
		start, length  float64 // ms from the guard dog's start
		miss, megaMiss int64
	}{
		{"short work never misses", 50, 150, 0, 0},
		{"just under an interval after its check-in", 1, 390, 0, 0}, // checks in at 200, ends 391
		{"a whole interval untouched", 1, 400, 1, 0},
		{"300 ms starting at a step", 0, 300, 1, 0},
		{"300 ms starting just after one", 1, 300, 0, 0},
		{"stuck over a second", 10, 1300, 1, 1},
		{"stuck a little under", 10, 1150, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := NewWorkerQ(nil)
			q.SetLoop(NewEventLoop(t0, 0, 0, nil, nil))
			q.Book(ms(c.start), nil, time.Duration(c.length*float64(time.Millisecond)), nil)
			l, running := q.LoopAt(ms(c.start + c.length + 500))
			if running != nil {
				t.Fatal("the work should be done")
			}
			if m, mm := l.Misses(ms(c.start+c.length+500), nil); m != c.miss || mm != c.megaMiss {
				t.Errorf("misses %d, mega %d; want %d, %d", m, mm, c.miss, c.megaMiss)
			}
		})
	}
}

// A stall is counted while it lasts: the guard dog steps during it, not when it ends.
func TestWatchdogMissWhileStuck(t *testing.T) {
	q := NewWorkerQ(nil)
	q.SetLoop(NewEventLoop(t0, 0, 0, nil, nil))
	q.Book(ms(0), nil, 5*time.Second, nil)
	for _, c := range []struct {
		at             float64
		miss, megaMiss int64
	}{{150, 0, 0}, {250, 1, 0}, {999, 1, 0}, {1001, 1, 1}, {4000, 1, 1}} {
		l, running := q.LoopAt(ms(c.at))
		if m, mm := l.Misses(ms(c.at), running); m != c.miss || mm != c.megaMiss {
			t.Errorf("at %v ms: misses %d, mega %d; want %d, %d", c.at, m, mm, c.miss, c.megaMiss)
		}
	}
}

func hist(t *testing.T) *Stat { t.Helper(); return NewStore().Histogram("h", "h") }

func samples(s *Stat) (uint64, float64) { _, n, sum := s.Snapshot(); return n, sum }

// Work that arrives while an iteration runs waits for the next one, which takes all of it: a
// worker offered more than it serves runs ever longer iterations (libevent's event_base_loop,
// LibeventScheduler::onPrepareForStats).
func TestLoopDurationGrowsWithTheBacklog(t *testing.T) {
	ld, pd := hist(t), hist(t)
	q := NewWorkerQ(nil)
	q.SetLoop(NewEventLoop(t0, 0, 0, ld, pd))
	q.Book(ms(1), nil, time.Millisecond, nil) // iteration 1: [1, 2]
	q.Book(ms(1.5), nil, time.Millisecond, nil)
	q.Book(ms(1.6), nil, time.Millisecond, nil) // iteration 2: [2, 4]
	for i := 0; i < 4; i++ {
		q.Book(ms(3), nil, time.Millisecond, nil) // iteration 3: [4, 8]
	}
	q.LoopAt(ms(9))
	if n, sum := samples(ld); n != 3 || sum != 7000 {
		t.Fatalf("loop durations: %d samples summing %v µs, want 3 summing 1000+2000+4000", n, sum)
	}
	// The first wake is by I/O before the touch timer (early: nothing recorded); the next two
	// find I/O ready and the timer not due (early again).
	if n, _ := samples(pd); n != 0 {
		t.Errorf("poll delays: %d samples, want none", n)
	}
}

// An idle loop wakes for its touch timer every half interval: a whole-millisecond poll that
// ends late by what rounds the timeout up (libevent's epoll_dispatch, evutil_tv_to_msec_).
func TestPollDelayOfTimerWakes(t *testing.T) {
	ld, pd := hist(t), hist(t)
	q := NewWorkerQ(nil)
	l := NewEventLoop(t0, 0, 0, ld, pd)
	q.SetLoop(l)
	q.Book(ms(10), nil, 300*time.Microsecond, nil) // ends at 10.3: the timer is 89.7 ms away
	q.LoopAt(ms(250))
	// Wakes at 100.3 (late by 300 µs), then at 200.3 (on time: the poll began as the timer
	// was armed again).
	n, sum := samples(pd)
	if n != 2 || sum != 300 {
		t.Fatalf("poll delays: %d samples summing %v µs, want 2 summing 300", n, sum)
	}
	if n, sum := samples(ld); n != 3 || sum != 300 {
		t.Errorf("loop durations: %d summing %v µs, want the I/O iteration and two empty ones", n, sum)
	}
	if got := l.TouchInterval(); got != 100*time.Millisecond {
		t.Errorf("touch interval %s, want 100ms", got)
	}
}
