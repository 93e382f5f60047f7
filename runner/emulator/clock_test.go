package emulator

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestClockWakesOnTime checks the clock's behaviour: nobody wakes before their deadline, and
// waiters are released in deadline order.
func TestClockWakesOnTime(t *testing.T) {
	c := NewClock()
	defer c.Close()
	// The order is recorded after each waiter wakes, so a starved machine's scheduling delay
	// longer than the spacing can reorder what is recorded: a wrong order is measured again
	// with wider spacing, and fails only if it stays wrong. Waking early fails at once.
	spacing := 20 * time.Millisecond
	retry(t, 3, func() error {
		defer func() { spacing *= 4 }()
		return wakeInOrder(t, c, 5, spacing)
	})
}

// wakeInOrder queues n waiters whose deadlines are spacing apart, the first one spacing out
// (so every waiter is asleep before the first is due), and reports the order they woke in.
func wakeInOrder(t *testing.T, c *Clock, n int, spacing time.Duration) error {
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	start := time.Now().Add(spacing)
	for i := n; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := start.Add(time.Duration(i-1) * spacing)
			if err := c.SleepUntil(context.Background(), at); err != nil {
				t.Error(err)
			}
			if now := time.Now(); now.Before(at.Add(-clockSlop - maxLead)) {
				t.Errorf("waiter %d woke %s early", i, at.Sub(now))
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if !sort.IntsAreSorted(order) {
		return fmt.Errorf("wake order %v with deadlines %s apart", order, spacing)
	}
	return nil
}

func TestClockContextCancel(t *testing.T) {
	c := NewClock()
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	if err := c.SleepUntil(ctx, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("no error after cancel")
	}
}

func BenchmarkClockOvershoot(b *testing.B) {
	c := NewClock()
	defer c.Close()
	var over []time.Duration
	for i := 0; i < b.N; i++ {
		at := time.Now().Add(250 * time.Microsecond)
		_ = c.SleepUntil(context.Background(), at)
		over = append(over, time.Since(at))
	}
	sort.Slice(over, func(i, j int) bool { return over[i] < over[j] })
	b.ReportMetric(float64(over[len(over)/2].Microseconds()), "p50-overshoot-us")
	b.ReportMetric(float64(over[len(over)*99/100].Microseconds()), "p99-overshoot-us")
}
