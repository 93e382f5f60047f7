package emulator

import (
	"errors"
	"sync"
	"time"
)

// timerAlarm is the portable alarm on Go's timer; its precision is about a millisecond when the
// process is otherwise idle.
type timerAlarm struct {
	mu     sync.Mutex
	t      *time.Timer
	fired  chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newTimerAlarm() alarm {
	a := &timerAlarm{fired: make(chan struct{}, 1), closed: make(chan struct{})}
	a.t = time.AfterFunc(time.Hour, func() {
		select {
		case a.fired <- struct{}{}:
		default:
		}
	})
	a.t.Stop()
	return a
}

func (a *timerAlarm) set(d time.Duration) {
	a.mu.Lock()
	a.t.Reset(d)
	a.mu.Unlock()
}

func (a *timerAlarm) wait() error {
	select {
	case <-a.fired:
		return nil
	case <-a.closed:
		return errors.New("alarm closed")
	}
}

func (a *timerAlarm) close() { a.once.Do(func() { close(a.closed); a.t.Stop() }) }
