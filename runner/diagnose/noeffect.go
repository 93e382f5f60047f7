package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// What the stats say about levers that would do nothing: streams that outlive a rotation's
// drain, workers a CPU limit cannot feed, balancing inside a pod with one worker.

// longLivedS is the mean stream life from which streams are called long-lived: a rotation
// limit on the scale of seconds to minutes cannot move them within its own period.
const longLivedS = 30

// StreamMix is what Envoy's stats show of the streams: how many were in flight, how many began
// in the window, and by Little's law how long one lives; and drains that did not finish.
type StreamMix struct {
	Active  float64 `json:"active"`
	Started float64 `json:"started"`
	// MeanLifeS is Active over the rate streams began at (-1: none began, they all outlive
	// the window).
	MeanLifeS float64 `json:"mean_life_s"`
	LongLived bool    `json:"long_lived"`
	// Drained is the connections a duration rotation drained (downstream_cx_max_duration_reached)
	// and Closed those that closed in the window (downstream_cx_destroy).
	Drained float64 `json:"drained"`
	Closed  float64 `json:"closed"`
	// Ended is downstream_rq_max_duration_reached: streams max_stream_duration ended.
	Ended float64 `json:"max_duration_reached"`
	Text  string  `json:"text"`
}

func streamMix(w *Window, r *Report) *StreamMix {
	m := &StreamMix{Started: r.Requests}
	for _, p := range w.Pods {
		m.Active += p.Post.RqActive
		m.Drained += p.Delta.MaxDurationReached
		m.Closed += p.Delta.CxDestroy
		m.Ended += p.Delta.RqMaxDurationReached
	}
	if m.Active == 0 {
		return nil
	}
	switch {
	case m.Started == 0:
		m.MeanLifeS = -1
	case w.Span > 0:
		m.MeanLifeS = m.Active / (m.Started / w.Span.Seconds())
	}
	m.LongLived = m.MeanLifeS < 0 || m.MeanLifeS >= longLivedS
	life := fmt.Sprintf("each lives about %s on average (Little's law: in flight over the rate they begin at)", secs(m.MeanLifeS))
	if m.MeanLifeS < 0 {
		life = "they all outlive it"
	}
	m.Text = fmt.Sprintf("%.0f stream(s) in flight at the end, %.0f began %s: %s", m.Active, m.Started, w.period(), life)
	if m.LongLived {
		m.Text += "; long-lived streams (a watch, a feed, a long poll)"
	}
	if m.Drained > m.Closed {
		m.Text += fmt.Sprintf("; %d connection(s) reached max_connection_duration and only %d closed: drains that do not finish while streams hold them", int(m.Drained), int(m.Closed))
	} else if r.Rotation.MaxRequestsReached > 0 && m.LongLived && m.Closed == 0 {
		m.Text += fmt.Sprintf("; downstream_cx_max_requests_reached rose by %d and no connection closed: drains that do not finish while streams hold them", int(r.Rotation.MaxRequestsReached))
	}
	if m.Ended > 0 {
		m.Text += fmt.Sprintf("; max_stream_duration ended %d stream(s) (downstream_rq_max_duration_reached)", int(m.Ended))
	}
	return m
}

func secs(s float64) string {
	if s >= 120 {
		return fmt.Sprintf("%.0f min", s/60)
	}
	return fmt.Sprintf("%.0f s", s)
}

// cpuLines says, pod by pod, how its workers sit against its CPU limit and how often the
// kernel held it to the limit; and the levers that limit makes useless.
func cpuLines(w *Window, r *Report) (lines, noEffect []string) {
	names := make([]string, 0, len(w.CPU))
	for n := range w.CPU {
		names = append(names, n)
	}
	sort.Strings(names)
	over, under := []string{}, []string{}
	for _, n := range names {
		c := w.CPU[n]
		workers := 0
		for _, p := range r.Pods {
			if p.Name == n {
				workers = p.Workers
			}
		}
		if !c.Limited || c.LimitCores == 0 {
			lines = append(lines, fmt.Sprintf("%s: %d worker(s), no CPU limit (no CFS quota): the kernel never holds it back; its workers can use as many cores as the node gives them", n, workers))
			continue
		}
		share := 0.0
		if c.Periods > 0 {
			share = c.Throttled / c.Periods
		}
		line := fmt.Sprintf("%s: %d worker(s) under a CPU limit of %g cores; throttled in %.0f%% of its CFS periods (%d of %d), its threads held back %.1f s",
			n, workers, c.LimitCores, 100*share, int(c.Throttled), int(c.Periods), c.ThrottledS)
		switch {
		case workers > int(math.Ceil(c.LimitCores)):
			line += fmt.Sprintf(": more workers than cores; when they are busy together they spend each 100 ms period's quota early and all wait for the next. Set concurrency to %g (Istio's own default from the limit, ISTIO_CPU_LIMIT rounded up)", math.Ceil(c.LimitCores))
			if share > 0.01 {
				over = append(over, fmt.Sprintf("%s (%d workers, %g cores, throttled in %.0f%% of periods)", n, workers, c.LimitCores, 100*share))
			}
		case workers > 0 && float64(workers) < math.Floor(c.LimitCores):
			line += fmt.Sprintf(": fewer workers than cores; one connection can use one core of the %g", c.LimitCores)
			under = append(under, n)
		}
		lines = append(lines, line)
	}
	if len(over) > 0 {
		noEffect = append(noEffect, "more workers (concurrency) for "+strings.Join(over, ", ")+": past the limit they add throttling, not capacity")
	}
	if len(under) > 0 && r.Verdict != AsChance {
		noEffect = append(noEffect, fmt.Sprintf("more CPU for %s: the hot load rides few connections, each on one worker, and a worker uses one core at most; spread the connections instead", strings.Join(under, ", ")))
	}
	return lines, noEffect
}

// noEffect lists the levers that would do nothing for what the stats show.
func noEffect(w *Window, r *Report) []string {
	var out []string
	if m := r.Streams; m != nil && m.LongLived {
		out = append(out, "rotation alone (max_requests_per_connection, max_connection_duration): a drain (GOAWAY) moves a client's next streams, never the ones it holds, and a drained connection stays open until they end; "+
			"these streams outlive any such limit, so their load stays where it is (envoyproxy/envoy#10274). max_stream_duration ends them; with rotation in force their successors land on new connections (the lab's 19-streams scenarios)")
	}
	if r.Verdict != AsChance && r.Verdict != NotEnoughData {
		one := true
		for _, p := range r.Pods {
			one = one && p.Workers <= 1
		}
		if one {
			out = append(out, "exact_balance: it balances connections among a pod's workers, and these pods run one worker each")
		}
	}
	_, cpuNo := cpuLines(w, r)
	return append(out, cpuNo...)
}
