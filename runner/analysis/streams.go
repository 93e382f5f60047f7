package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Streams is what a client of long-lived streams shows: where their messages went, what
// ended them, and how much of their life they spent on connections the gateway had already
// asked to leave. A drain (GOAWAY) moves a client's next streams, never the ones it holds: a
// connection past its rotation limit stays open for as long as its streams do.
type Streams struct {
	// LoadCV is the CV across pods of the bytes the gateway sent its clients in the window
	// (downstream_cx_tx_bytes_total): where the streams' messages went, whatever the
	// connections' count says. LoadPerPod is each pod's share.
	LoadCV     float64            `json:"load_cv"`
	LoadPerPod map[string]float64 `json:"load_share_per_pod"`
	// Opened are the streams the client opened; EndedBy how those that ended before the
	// window did ended (the gateway's reset, the server completing them).
	Opened  int64            `json:"opened"`
	EndedBy map[string]int64 `json:"ended_by,omitempty"`
	// MaxDurationReached is downstream_rq_max_duration_reached: streams the gateway ended.
	MaxDurationReached float64 `json:"max_duration_reached"`
	// Limit is the rotation limit in force ("" without one), PastLimitShare the share of the
	// streams' seconds spent on connections past it (drained by the gateway, kept by their
	// streams), DrainedConns the connections that passed it, and DrainedOpen those of them
	// that still carried a stream at the window's end, DrainedOpenS the longest any of them
	// stayed open past its limit.
	Limit          string  `json:"limit,omitempty"`
	PastLimitShare float64 `json:"past_limit_share"`
	DrainedConns   int     `json:"drained_connections"`
	DrainedOpen    int     `json:"drained_still_open"`
	DrainedOpenS   float64 `json:"drained_open_s"`
	// Conns are the connections that carried streams.
	Conns int `json:"connections"`
}

// rotationLimit is the rotation in force among the knobs: a count (max_requests_per_connection)
// and a duration (max_connection_duration), 0 where unset.
type rotationLimit struct {
	count    int
	duration time.Duration
}

func rotationOf(knobs []stacks.KnobValue) rotationLimit {
	var r rotationLimit
	for _, kv := range knobs {
		switch {
		case strings.HasSuffix(kv.Path, ".max_requests_per_connection"):
			r.count, _ = strconv.Atoi(kv.Value)
		case strings.HasSuffix(kv.Path, ".max_connection_duration"):
			if d, err := stacks.ParseDuration(kv.Value); err == nil {
				r.duration = d.D()
			}
		}
	}
	return r
}

func (r rotationLimit) String() string {
	var parts []string
	if r.count > 0 {
		parts = append(parts, fmt.Sprintf("max_requests_per_connection %d", r.count))
	}
	if r.duration > 0 {
		parts = append(parts, "max_connection_duration "+stacks.Duration(r.duration).String())
	}
	return strings.Join(parts, ", ")
}

// passed is when a connection passes the limit, in seconds from the window's start: at its
// count-th stream (the gateway drains it as it takes that request up), or its duration after
// it opened, whichever comes first; ok is false when it never does within its streams.
func (r rotationLimit) passed(c h2dial.ConnUse) (float64, bool) {
	at, ok := math.Inf(1), false
	if r.count > 0 && len(c.Streams) >= r.count {
		starts := make([]float64, len(c.Streams))
		for i, s := range c.Streams {
			starts[i] = s.StartS
		}
		sort.Float64s(starts)
		at, ok = starts[r.count-1], true
	}
	if r.duration > 0 {
		at, ok = math.Min(at, c.OpenedS+r.duration.Seconds()), true
	}
	return at, ok
}

// streamsOf computes Streams from the pods' deltas and the client's record of its connections.
func streamsOf(deltas []stats.Pod, c *Client, knobs []stacks.KnobValue) *Streams {
	s := &Streams{LoadPerPod: map[string]float64{}}
	var load []float64
	total := 0.0
	for _, d := range deltas {
		load = append(load, d.TxBytes)
		total += d.TxBytes
		s.MaxDurationReached += d.RqMaxDurationReached
	}
	s.LoadCV = CV(load)
	for _, d := range deltas {
		s.LoadPerPod[d.Name] = ratioOf(d.TxBytes, total)
	}
	if c == nil {
		return s
	}
	s.Opened, s.EndedBy = c.StreamsOpened, c.StreamEnds
	lim := rotationOf(knobs)
	s.Limit = lim.String()
	var all, past float64
	for _, cn := range c.Conns {
		if len(cn.Streams) > 0 {
			s.Conns++
		}
		at, ok := lim.passed(cn)
		last, open := 0.0, false
		for _, sp := range cn.Streams {
			all += sp.EndS - sp.StartS
			if ok {
				past += math.Max(0, sp.EndS-math.Max(sp.StartS, at))
			}
			last, open = math.Max(last, sp.EndS), open || sp.Open
		}
		if ok && at < last {
			s.DrainedConns++
			if open {
				s.DrainedOpen++
			}
			s.DrainedOpenS = math.Max(s.DrainedOpenS, last-at)
		}
	}
	s.PastLimitShare = ratioOf(past, all)
	if all == 0 {
		s.PastLimitShare = 0
	}
	return s
}

// endedText names what ended the streams early, most first.
func (s *Streams) endedText() string {
	if len(s.EndedBy) == 0 {
		return "no stream ended before the window did"
	}
	keys := make([]string, 0, len(s.EndedBy))
	for k := range s.EndedBy {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return s.EndedBy[keys[i]] > s.EndedBy[keys[j]] || s.EndedBy[keys[i]] == s.EndedBy[keys[j]] && keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d by %s", s.EndedBy[k], k))
	}
	return "streams ended early: " + strings.Join(parts, ", ")
}
