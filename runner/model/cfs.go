package model

import (
	"sync"
	"time"
)

// Quota is a gateway container's CPU limit as the kernel enforces it: CFS bandwidth control
// over the container's threads (its workers). The kubelet sets a quota of limit x 100 ms per
// 100 ms period (pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota, QuotaPeriod). Within a
// period the threads together may run for the quota; once it is spent every thread of the
// container waits for the next period, when the period timer refills it
// (kernel/sched/fair.c throttle_cfs_rq, do_sched_cfs_period_timer,
// __refill_cfs_bandwidth_runtime).
//
// The model hands runtime out as work is booked on the workers' clock, first booked first
// served, rather than in 5 ms slices as it runs: a booking runs, in each period, for as long as
// the period and the quota's remainder allow, and what is left waits for the next period.
// Workers at most as many as the limit's cores can never spend a period's quota (each runs at
// most one period per period); more workers can, and then every one of them stalls until the
// period ends, the tail latency Istio's source warns of (its ProxyConfig.concurrency doc;
// pilot-agent's ConstructProxyConfig).
//
// It counts what cAdvisor reads from the cgroup's cpu.stat (container/libcontainer/handler.go
// setCPUStats): nr_periods, the periods in which the container ran (the period timer stops
// while it idles, so idle periods are not counted); nr_throttled, the periods at whose end a
// thread was still waiting for runtime; and throttled_time, each waiting thread's wait, summed
// over threads (the kernel sums it per CPU).
//
// Time is the caller's: the socket emulator passes the wall clock, the simulator its virtual
// one; periods are aligned to origin, the container's start.
type Quota struct {
	Period, Quota time.Duration
	origin        time.Time // period k is [origin+k*period, origin+(k+1)*period)

	mu      sync.Mutex
	periods map[int64]*cfsPeriod
	// done is the first period not yet folded into the totals below.
	done                     int64
	nrPeriods, nrThrottled   int64
	throttledTime            time.Duration
	usage                    time.Duration // runtime of the periods folded in
	LimitMilli, RequestMilli int64
}

// cfsPeriod is what the ledger holds of one period.
type cfsPeriod struct {
	used    time.Duration // runtime handed out
	starved int           // bookings that ran out of runtime in it and waited for the next
	waited  time.Duration // their waits, which end at the period's end
}

// Segment is a piece of a booking that runs in one period, and its wait for the next period
// when the quota ran out under it.
type Segment struct {
	period int64
	Start  time.Time
	Run    time.Duration
	Wait   time.Duration
}

// QuotaPeriod is the kubelet's CFS period (QuotaPeriod, 100000 us).
const QuotaPeriod = 100 * time.Millisecond

// NewQuota is the quota of a limit in millicores for a container started at origin (0: none,
// nil).
func NewQuota(limitMilli, requestMilli int64, origin time.Time) *Quota {
	if limitMilli <= 0 {
		return nil
	}
	return &Quota{Period: QuotaPeriod, Quota: time.Duration(limitMilli) * QuotaPeriod / 1000, origin: origin,
		periods: map[int64]*cfsPeriod{}, LimitMilli: limitMilli, RequestMilli: requestMilli}
}

func (q *Quota) index(t time.Time) int64 { return int64(t.Sub(q.origin) / q.Period) }

func (q *Quota) startOf(k int64) time.Time { return q.origin.Add(time.Duration(k) * q.Period) }

func (q *Quota) at(k int64) *cfsPeriod {
	p := q.periods[k]
	if p == nil {
		p = &cfsPeriod{}
		q.periods[k] = p
	}
	return p
}

// Place runs d of one thread's work from start under the quota, as of now, and returns its
// segments and when it ends.
func (q *Quota) Place(now, start time.Time, d time.Duration) ([]Segment, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.foldLocked(now)
	var segs []Segment
	t := start
	for {
		k := q.index(t)
		end := q.startOf(k + 1)
		p := q.at(k)
		run := min(d, q.Quota-p.used, end.Sub(t))
		if run > 0 {
			p.used += run
			segs = append(segs, Segment{period: k, Start: t, Run: run})
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
				segs[len(segs)-1].Wait = end.Sub(t)
			} else {
				segs = append(segs, Segment{period: k, Start: t, Wait: end.Sub(t)})
			}
		}
		t = end
	}
}

// Release gives back the runtime and waits of segments that will not run (dropped or retimed
// work, which has not started).
func (q *Quota) Release(segs []Segment) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range segs {
		p := q.periods[s.period]
		if p == nil {
			continue // folded: it ran, or its period is over
		}
		p.used -= s.Run
		if s.Wait > 0 {
			p.starved--
			p.waited -= s.Wait
		}
	}
}

// foldLocked moves the periods that ended before now into the totals.
func (q *Quota) foldLocked(now time.Time) {
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

func (q *Quota) fold(p *cfsPeriod) {
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

// Stats reads the counters as of now: the periods that ended, and the one under way if the
// container ran in it (the kernel counts a period as its timer fires, at its end; cAdvisor's
// nr_periods is one ahead while the container runs).
func (q *Quota) Stats(now time.Time) CFSStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.foldLocked(now)
	s := CFSStats{Periods: q.nrPeriods, Throttled: q.nrThrottled, ThrottledTime: q.throttledTime}
	if p := q.periods[q.index(now)]; p != nil && (p.used > 0 || p.starved > 0) && now.After(q.startOf(q.index(now))) {
		s.Periods++
	}
	return s
}

// CPULimit is the CFS limit a gateway pod of workers runs under, in millicores, from the limit
// asked for: 0 is the lab's, one core per worker (it sets request = limit = concurrency); a
// negative one is none (0 returned).
func CPULimit(workers int, asked int64) int64 {
	switch {
	case asked < 0:
		return 0
	case asked == 0:
		return int64(workers) * 1000
	}
	return asked
}

// CPURequest is a gateway pod's CPU request in millicores: the one asked for, or the limit.
func CPURequest(workers int, limit, asked int64) int64 {
	if asked > 0 {
		return asked
	}
	return CPULimit(workers, limit)
}
