package h2dial

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// Histogram records latencies in microseconds in log-linear buckets, as HdrHistogram does:
// every power of two is split into 64 equal sub-buckets, so any recorded value is known to
// within 1/64 (1.6%) of itself, from 1 µs to over an hour, in a fixed 17 KiB. It is not safe
// for concurrent use: workers record through a lockedHist, and the run merges those.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64 // µs
	min    uint64
	max    uint64
}

const (
	histLinear  = 128 // values below this have a bucket each
	histSub     = 64  // sub-buckets per power of two above histLinear
	histBuckets = histLinear + 40*histSub
)

func bucketOf(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	e := bits.Len64(us) - 7 // >= 1
	m := us >> uint(e)      // in [64, 128)
	b := histLinear + (e-1)*histSub + int(m-histSub)
	if b >= histBuckets {
		return histBuckets - 1
	}
	return b
}

// bucketHigh is the largest value that falls in bucket b.
func bucketHigh(b int) uint64 {
	if b < histLinear {
		return uint64(b)
	}
	e := (b-histLinear)/histSub + 1
	m := uint64((b-histLinear)%histSub + histSub)
	return (m+1)<<uint(e) - 1
}

// histShards is how many histograms the workers of a run share: enough that workers on
// different cores rarely meet on one lock, few enough to stay in cache.
const histShards = 8

// lockedHist is a Histogram shared by several workers.
type lockedHist struct {
	mu sync.Mutex
	h  Histogram
}

func (l *lockedHist) record(d time.Duration) {
	l.mu.Lock()
	l.h.Record(d)
	l.mu.Unlock()
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	h.counts[bucketOf(us)]++
	if h.n == 0 || us < h.min {
		h.min = us
	}
	if us > h.max {
		h.max = us
	}
	h.n++
	h.sum += us
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the latency at quantile q (0..1): the highest value equivalent to the
// sample at that rank, never more than the largest recorded value.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketHigh(b)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return time.Duration(v) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// Mean returns the mean latency.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum/h.n) * time.Microsecond
}

// Summary returns the usual percentiles.
func (h *Histogram) Summary() Latency {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Latency{
		Count: h.n,
		Min:   ms(time.Duration(h.min) * time.Microsecond),
		Mean:  ms(h.Mean()),
		P50:   ms(h.Quantile(0.50)),
		P75:   ms(h.Quantile(0.75)),
		P90:   ms(h.Quantile(0.90)),
		P99:   ms(h.Quantile(0.99)),
		P999:  ms(h.Quantile(0.999)),
		Max:   ms(time.Duration(h.max) * time.Microsecond),
	}
}

// Buckets returns the non-empty buckets as (upper bound in ms, count) pairs, for plots.
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for b, c := range h.counts {
		if c > 0 {
			out = append(out, Bucket{LeMs: float64(bucketHigh(b)) / 1000, Count: c})
		}
	}
	return out
}

// Latency summarises a histogram in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min_ms"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P75   float64 `json:"p75_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// Bucket is one histogram bucket.
type Bucket struct {
	LeMs  float64 `json:"le_ms"`
	Count uint64  `json:"count"`
}
