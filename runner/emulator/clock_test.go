package emulator

import (
	"context"
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
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	// Deadlines 20 ms apart, the first 20 ms out, so every waiter is asleep before the first
	// is due and a busy machine's scheduling delays cannot reorder what is recorded on waking.
	start := time.Now().Add(20 * time.Millisecond)
	for i := 5; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := start.Add(time.Duration(i-1) * 20 * time.Millisecond)
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
		t.Fatalf("wake order %v", order)
	}
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
