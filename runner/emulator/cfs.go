package emulator

import (
	"sync"
	"time"
)

// cpuQuota is a gateway container's CPU limit as the kernel enforces it: CFS bandwidth control
// over the container's threads (its workers). The kubelet sets a quota of limit x 100 ms per
// 100 ms period (pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota, QuotaPeriod). Within a
// period the threads together may run for the quota; once it is spent every thread of the
// container waits for the next period, when the period timer refills it
// (kernel/sched/fair.c throttle_cfs_rq, do_sched_cfs_period_timer,
// __refill_cfs_bandwidth_runtime).
//
// The model hands runtime out as work is booked on the workers' virtual clock, first booked
// first served, rather than in 5 ms slices as it runs: a booking runs, in each period, for as
// long as the period and the quota's remainder allow, and what is left waits for the next
// period. Workers at most as many as the limit's cores can never spend a period's quota
// (each runs at most one period per period); more workers can, and then every one of them
// stalls until the period ends, the tail latency Istio's source warns of (its
// ProxyConfig.concurrency doc; pilot-agent's ConstructProxyConfig).
//
// It counts what cAdvisor reads from the cgroup's cpu.stat (container/libcontainer/handler.go
// setCPUStats): nr_periods, the periods in which the container ran (the period timer stops
// while it idles, so idle periods are not counted); nr_throttled, the periods at whose end a
// thread was still waiting for runtime; and throttled_time, each waiting thread's wait, summed
// over threads (the kernel sums it per CPU).
type cpuQuota struct {
	period, quota time.Duration
	origin        time.Time // period k is [origin+k*period, origin+(k+1)*period)

	mu      sync.Mutex
	periods map[int64]*cfsPeriod
	// done is the first period not yet folded into the totals below.
	done                     int64
	nrPeriods, nrThrottled   int64
	throttledTime            time.Duration
	usage                    time.Duration // runtime of the periods folded in
	limitMilli, requestMilli int64
}

// cfsPeriod is what the ledger holds of one period.
type cfsPeriod struct {
	used    time.Duration // runtime handed out
	starved int           // bookings that ran out of runtime in it and waited for the next
	waited  time.Duration // their waits, which end at the period's end
}

// segment is a piece of a booking that runs in one period, and its wait for the next period
// when the quota ran out under it.
type segment struct {
	period int64
	start  time.Time
	run    time.Duration
	wait   time.Duration
}

// quotaPeriod is the kubelet's CFS period (QuotaPeriod, 100000 us).
const quotaPeriod = 100 * time.Millisecond

// newCPUQuota is the quota of a limit in millicores (0: none, nil).
func newCPUQuota(limitMilli, requestMilli int64) *cpuQuota {
	if limitMilli <= 0 {
		return nil
	}
	return &cpuQuota{period: quotaPeriod, quota: time.Duration(limitMilli) * quotaPeriod / 1000, origin: time.Now(),
		periods: map[int64]*cfsPeriod{}, limitMilli: limitMilli, requestMilli: requestMilli}
}

func (q *cpuQuota) index(t time.Time) int64 { return int64(t.Sub(q.origin) / q.period) }

func (q *cpuQuota) startOf(k int64) time.Time { return q.origin.Add(time.Duration(k) * q.period) }

func (q *cpuQuota) at(k int64) *cfsPeriod {
	p := q.periods[k]
	if p == nil {
		p = &cfsPeriod{}
		q.periods[k] = p
	}
	return p
}

// place runs d of one thread's work from start under the quota and returns its segments and
// when it ends.
func (q *cpuQuota) place(start time.Time, d time.Duration) ([]segment, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.foldLocked(time.Now())
	var segs []segment
	t := start
	for {
		k := q.index(t)
		end := q.startOf(k + 1)
		p := q.at(k)
		run := min(d, q.quota-p.used, end.Sub(t))
		if run > 0 {
			p.used += run
			segs = append(segs, segment{period: k, start: t, run: run})
			d -= run
			t = t.Add(run)
		}
		if d <= 0 {
			return segs, t
		}
		if t.Before(end) { // the quota ran out under it: it waits for the next period
			p.starved++
			p.waited += end.Sub(t)
			if run > 0 {
				segs[len(segs)-1].wait = end.Sub(t)
			} else {
				segs = append(segs, segment{period: k, start: t, wait: end.Sub(t)})
			}
		}
		t = end
	}
}

// release gives back the runtime and waits of segments that will not run (dropped or retimed
// work, which has not started).
func (q *cpuQuota) release(segs []segment) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range segs {
		p := q.periods[s.period]
		if p == nil {
			continue // folded: it ran, or its period is over
		}
		p.used -= s.run
		if s.wait > 0 {
			p.starved--
			p.waited -= s.wait
		}
	}
}

// foldLocked moves the periods that ended before now into the totals.
func (q *cpuQuota) foldLocked(now time.Time) {
	cur := q.index(now)
	for ; q.done < cur; q.done++ {
		p := q.periods[q.done]
		if p == nil {
			continue
		}
		q.fold(p)
		delete(q.periods, q.done)
	}
}

func (q *cpuQuota) fold(p *cfsPeriod) {
	if p.used > 0 || p.starved > 0 {
		q.nrPeriods++
	}
	if p.starved > 0 {
		q.nrThrottled++
	}
	q.throttledTime += p.waited
	q.usage += p.used
}

// CFSStats are a container's cpu.stat counters as cAdvisor reports them.
type CFSStats struct {
	Periods, Throttled int64
	ThrottledTime      time.Duration
}

// stats reads the counters as of now: the periods that ended, and the one under way if the
// container ran in it (the kernel counts a period as its timer fires, at its end; cAdvisor's
// nr_periods is one ahead while the container runs).
func (q *cpuQuota) stats() CFSStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.foldLocked(now)
	s := CFSStats{Periods: q.nrPeriods, Throttled: q.nrThrottled, ThrottledTime: q.throttledTime}
	if p := q.periods[q.index(now)]; p != nil && (p.used > 0 || p.starved > 0) && now.After(q.startOf(q.index(now))) {
		s.Periods++
	}
	return s
}
