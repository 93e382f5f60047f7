package emulator

import "sync"

// runners serve the pool's streams on goroutines that outlive a request. A stream's handler
// runs the filters, the upstream exchange and, in the process, go-httpbin's handler: deep
// enough that a new goroutine's stack grows and is copied on every request
// (runtime.newstack and copystack were 8% of the pool's CPU under the harness,
// ./bin/bench -only harness -cpuprofile). A runner that has served one request keeps its grown
// stack for the next.
type runners struct {
	mu   sync.Mutex
	idle []chan func()
	done chan struct{}
	once sync.Once
}

// maxIdleRunners bounds the goroutines kept waiting: a burst of thousands of streams leaves at
// most this many behind.
const maxIdleRunners = 256

func newRunners() *runners { return &runners{done: make(chan struct{})} }

// run runs f on an idle runner, or on a new one when none is idle.
func (r *runners) run(f func()) {
	r.mu.Lock()
	if n := len(r.idle); n > 0 {
		ch := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		ch <- f // buffered: the runner is between its append and its receive at worst
		return
	}
	r.mu.Unlock()
	go r.loop(make(chan func(), 1), f)
}

func (r *runners) loop(ch chan func(), f func()) {
	for {
		f()
		f = nil
		r.mu.Lock()
		select {
		case <-r.done:
			r.mu.Unlock()
			return
		default:
		}
		if len(r.idle) >= maxIdleRunners {
			r.mu.Unlock()
			return
		}
		r.idle = append(r.idle, ch)
		r.mu.Unlock()
		select {
		case f = <-ch:
		case <-r.done:
			if r.leave(ch) {
				return
			}
			f = <-ch // run took this runner off the list before the pool closed: its work is coming
		}
	}
}

// leave takes an idle runner off the list as the pool closes; false when run already took it.
func (r *runners) leave(ch chan func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.idle {
		if c == ch {
			r.idle = append(r.idle[:i], r.idle[i+1:]...)
			return true
		}
	}
	return false
}

// close lets the idle runners go; work handed over later runs on new goroutines or the
// runners still busy.
func (r *runners) close() { r.once.Do(func() { close(r.done) }) }
