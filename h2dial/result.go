package h2dial

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Result is what a run did, as seen by the client.
type Result struct {
	URL       string  `json:"url"`
	Mode      string  `json:"mode"`
	Workers   int     `json:"workers"`
	TargetQPS float64 `json:"target_qps"`
	ElapsedS  float64 `json:"elapsed_s"`
	// Requests completed with a response, whatever its status.
	Requests int64 `json:"requests"`
	// Errors are transport failures plus responses with status >= 400.
	Errors int64 `json:"errors"`
	// Cancelled requests were in flight when the run ended.
	Cancelled int64 `json:"cancelled"`
	// Unsent requests were due (open loop) but no worker was free before the run ended.
	Unsent int64 `json:"unsent"`
	// SendLag (open loop) is how late requests went out after they were due: a client that
	// cannot keep up with the rate, or whose workers are all waiting on responses, sends late.
	SendLag     *Latency         `json:"send_lag,omitempty"`
	RPS         float64          `json:"rps"`
	StatusCodes map[string]int64 `json:"status_codes"`
	ErrorKinds  map[string]int64 `json:"error_kinds,omitempty"`
	Latency     Latency          `json:"latency"`
	Histogram   []Bucket         `json:"histogram"`
	// ConnectionsOpened counts TCP connections the client dialled.
	ConnectionsOpened int         `json:"connections_opened"`
	Connections       []ConnStat  `json:"connections"`
	Slow              *SlowResult `json:"slow,omitempty"`
	Interrupted       bool        `json:"interrupted,omitempty"`
	// LongStream: Requests are the messages the streams carried, Latency their delay;
	// StreamsOpened the streams, StreamEnds how those that ended before the run did ended,
	// and Streams each connection's streams.
	LongStream    bool             `json:"long_stream,omitempty"`
	StreamsOpened int64            `json:"streams_opened,omitempty"`
	StreamEnds    map[string]int64 `json:"stream_ends,omitempty"`
	Streams       []ConnUse        `json:"connections_used,omitempty"`
}

// SlowResult reports the slow workers apart from the fast ones.
type SlowResult struct {
	URL      string  `json:"url"`
	Workers  int     `json:"workers"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Latency  Latency `json:"latency"`
}

func (r *Result) fill(workers []*worker, elapsed time.Duration) {
	var h Histogram
	r.StatusCodes = map[string]int64{}
	kinds := map[string]int64{}
	merged := map[*lockedHist]bool{}
	for _, w := range workers {
		if w.hist != nil && !merged[w.hist] {
			merged[w.hist] = true
			h.Merge(&w.hist.h)
		}
		if w.ok200 > 0 {
			r.StatusCodes["200"] += w.ok200
		}
		r.Requests += w.requests
		r.Errors += w.errors
		r.Cancelled += w.cancelled
		r.Unsent += w.unsent
		for c, n := range w.status {
			r.StatusCodes[strconv.Itoa(c)] += n
		}
		for k, n := range w.errKinds {
			kinds[k] += n
		}
		r.StreamsOpened += w.opened
		for k, n := range w.ends {
			if r.StreamEnds == nil {
				r.StreamEnds = map[string]int64{}
			}
			r.StreamEnds[k] += n
		}
	}
	if len(kinds) > 0 {
		r.ErrorKinds = kinds
	}
	if elapsed > 0 {
		r.RPS = float64(r.Requests) / elapsed.Seconds()
	}
	r.Latency = h.Summary()
	var lag Histogram
	seen := map[*lockedHist]bool{}
	for _, w := range workers {
		if w.lag != nil && !seen[w.lag] {
			seen[w.lag] = true
			lag.Merge(&w.lag.h)
		}
	}
	if len(seen) > 0 {
		l := lag.Summary()
		r.SendLag = &l
	}
	r.Histogram = h.Buckets()
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes a human summary: totals, percentiles and one line per connection.
func (r *Result) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("h2dial summary\n")
	p("url: %s\n", r.URL)
	p("mode: %s  workers: %d  elapsed: %.1fs", r.Mode, r.Workers, r.ElapsedS)
	if r.TargetQPS > 0 {
		p("  target qps: %g (open loop)", r.TargetQPS)
	}
	if r.LongStream {
		p("\nlong streams: %d opened; messages: %d  errors: %d\n", r.StreamsOpened, r.Requests, r.Errors)
		for _, k := range slices.Sorted(maps.Keys(r.StreamEnds)) {
			p("streams ended before the run by %s: %d\n", k, r.StreamEnds[k])
		}
	} else {
		p("\nrequests: %d  errors: %d  cancelled at end: %d  unsent: %d\n", r.Requests, r.Errors, r.Cancelled, r.Unsent)
	}
	p("qps: %.1f\n", r.RPS)
	if r.SendLag != nil {
		p("send lag ms (due to sent): p50 %.3f p99 %.3f max %.3f\n", r.SendLag.P50, r.SendLag.P99, r.SendLag.Max)
	}
	codes := slices.Sorted(maps.Keys(r.StatusCodes))
	for _, c := range codes {
		p("status %s: %d\n", c, r.StatusCodes[c])
	}
	for k, n := range r.ErrorKinds {
		p("error %q: %d\n", k, n)
	}
	l := r.Latency
	for _, q := range []struct {
		name string
		v    float64
	}{{"50", l.P50}, {"75", l.P75}, {"90", l.P90}, {"99", l.P99}, {"99.9", l.P999}} {
		p("# target %s%% %.6f\n", q.name, q.v/1000)
	}
	p("latency ms: min %.3f mean %.3f max %.3f\n", l.Min, l.Mean, l.Max)
	if r.Slow != nil {
		p("slow workers: %d on %s  requests: %d  errors: %d  p50 %.1fms  p99 %.1fms\n",
			r.Slow.Workers, r.Slow.URL, r.Slow.Requests, r.Slow.Errors, r.Slow.Latency.P50, r.Slow.Latency.P99)
	}
	p("connections opened: %d\n", r.ConnectionsOpened)
	for _, c := range r.Connections {
		closed := "open"
		if c.ClosedS != nil {
			closed = fmt.Sprintf("closed at %.2fs", *c.ClosedS)
		}
		p("  conn %d %s -> %s  requests %d  opened at %.2fs, %s\n", c.ID, c.LocalAddr, c.RemoteAddr, c.Requests, c.OpenedS, closed)
	}
	return nil
}
