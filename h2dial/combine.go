package h2dial

import (
	"math"
	"strings"
)

// Combine adds up the results of clients that ran side by side over the same window (one per
// client pod): counts add, rates add, connections are listed one after another, and the
// latency percentiles come from the merged histograms, so they are exact to a bucket as one
// client's are.
func Combine(rs []*Result) *Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := &Result{StatusCodes: map[string]int64{}}
	var h, lag Histogram
	var urls []string
	lagged := false
	for _, r := range rs {
		urls = append(urls, r.URL)
		out.Mode, out.LongStream = r.Mode, r.LongStream
		out.Workers += r.Workers
		out.TargetQPS += r.TargetQPS
		out.ElapsedS = math.Max(out.ElapsedS, r.ElapsedS)
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.Cancelled += r.Cancelled
		out.Unsent += r.Unsent
		out.RPS += r.RPS
		out.StreamsOpened += r.StreamsOpened
		out.Interrupted = out.Interrupted || r.Interrupted
		for k, n := range r.StatusCodes {
			out.StatusCodes[k] += n
		}
		for k, n := range r.ErrorKinds {
			if out.ErrorKinds == nil {
				out.ErrorKinds = map[string]int64{}
			}
			out.ErrorKinds[k] += n
		}
		for k, n := range r.StreamEnds {
			if out.StreamEnds == nil {
				out.StreamEnds = map[string]int64{}
			}
			out.StreamEnds[k] += n
		}
		h.addBuckets(r.Histogram, r.Latency)
		if r.SendLag != nil {
			lagged = true
			lag.addBuckets(nil, *r.SendLag)
		}
		out.ConnectionsOpened += r.ConnectionsOpened
		for _, c := range r.Connections {
			c.ID = len(out.Connections)
			out.Connections = append(out.Connections, c)
		}
		out.Streams = append(out.Streams, r.Streams...)
	}
	out.URL = strings.Join(urls, " ")
	out.Latency = h.Summary()
	out.Histogram = h.Buckets()
	if lagged {
		l := lag.Summary()
		out.SendLag = &l
	}
	return out
}

// addBuckets adds a result's histogram (its non-empty buckets and its summary's count, extremes
// and mean) to h. Without buckets, the summary's count goes to its mean's bucket.
func (h *Histogram) addBuckets(bs []Bucket, l Latency) {
	if l.Count == 0 {
		return
	}
	us := func(ms float64) uint64 { return uint64(math.Round(ms * 1000)) }
	if len(bs) == 0 {
		bs = []Bucket{{LeMs: l.Mean, Count: l.Count}}
	}
	for _, b := range bs {
		h.counts[bucketOf(us(b.LeMs))] += b.Count
	}
	if h.n == 0 || us(l.Min) < h.min {
		h.min = us(l.Min)
	}
	h.max = max(h.max, us(l.Max))
	h.n += l.Count
	h.sum += us(l.Mean) * l.Count
}
