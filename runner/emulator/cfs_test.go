package emulator

import (
	"context"
	"sync"
	"testing"
	"time"
)

// saturate keeps every worker busy with pieces of work of d for span, as a worker with a
// queue always is, and returns how much work they did.
func saturate(t *testing.T, ws []*Worker, d, span time.Duration) time.Duration {
	t.Helper()
	var before time.Duration
	for _, w := range ws {
		before += w.Busy()
	}
	ctx, cancel := context.WithTimeout(context.Background(), span)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := w.Serve(ctx, nil, d); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	var after time.Duration
	for _, w := range ws {
		after += w.Busy()
	}
	return after - before
}

func workersUnder(q *cpuQuota, n int) []*Worker {
	clock := NewClock()
	ws := make([]*Worker, n)
	for i := range ws {
		ws[i] = newWorker(i, clock, q, NewStore(), "lis", false)
	}
	return ws
}

// As many workers as the limit's cores never spend a period's quota: each runs at most one
// period per period. Eight under a limit of two do, and then they are held to it: two cores'
// work a second, and periods at whose end a worker waited.
func TestCPULimitThrottlesWorkersPastIt(t *testing.T) {
	cases := []struct {
		workers       int
		wantThrottled bool
	}{{2, false}, {8, true}}
	for _, c := range cases {
		q := newCPUQuota(2000, 2000)
		ws := workersUnder(q, c.workers)
		span := 800 * time.Millisecond
		busy := saturate(t, ws, 2*time.Millisecond, span)
		cores := busy.Seconds() / span.Seconds()
		time.Sleep(150 * time.Millisecond) // the last period ends and is counted
		st := q.Stats(time.Now())
		switch {
		case cores > 2.1:
			t.Errorf("%d workers did %.2f cores' work a second under a limit of 2", c.workers, cores)
		case c.workers == 2 && cores < 1.6:
			t.Errorf("2 busy workers did %.2f cores' work a second: a limit of 2 should not hold them back", cores)
		case c.workers == 8 && cores < 1.6:
			t.Errorf("8 busy workers did %.2f cores' work a second: the limit allows 2", cores)
		}
		if st.Periods < 6 || st.Periods > 11 {
			t.Errorf("%d workers: nr_periods %d over a busy 0.8 s", c.workers, st.Periods)
		}
		if got := st.Throttled > 0; got != c.wantThrottled {
			t.Errorf("%d workers under a limit of 2: nr_throttled %d, throttled time %s", c.workers, st.Throttled, st.ThrottledTime)
		}
		if c.wantThrottled && st.ThrottledTime < 100*time.Millisecond {
			t.Errorf("8 workers under 2 cores waited %s in all; each waits most of every period", st.ThrottledTime)
		}
	}
}
