package capacity

import (
	"fmt"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
)

// SLO is a latency objective: a percentile of the client's latency, measured from each
// request's intended send time, at most Limit.
type SLO struct {
	Percentile string        `json:"percentile"` // p50, p90, p99, p99.9
	Limit      time.Duration `json:"limit_ns"`
	Text       string        `json:"text"` // "p99 <= 50 ms"
}

// percentiles are the ones a result carries.
var percentiles = map[string]func(*analysis.Result) float64{
	"p50":   func(r *analysis.Result) float64 { return r.P50Ms },
	"p90":   func(r *analysis.Result) float64 { return r.P90Ms },
	"p99":   func(r *analysis.Result) float64 { return r.P99Ms },
	"p99.9": func(r *analysis.Result) float64 { return r.P999Ms },
	"p999":  func(r *analysis.Result) float64 { return r.P999Ms },
}

const sloForm = "want pNN=DURATION, e.g. p99=50ms (percentiles p50, p90, p99, p99.9; the limit 1ms..60s)"

// ParseSLO reads "p99=50ms".
func ParseSLO(text string) (SLO, error) {
	q, lim, ok := strings.Cut(strings.TrimSpace(text), "=")
	q = strings.ToLower(strings.TrimSpace(q))
	if !ok {
		return SLO{}, fmt.Errorf("%q: %s", text, sloForm)
	}
	if _, ok := percentiles[q]; !ok {
		return SLO{}, fmt.Errorf("%q: percentile %q: %s", text, q, sloForm)
	}
	d, err := time.ParseDuration(strings.TrimSpace(lim))
	if err != nil {
		return SLO{}, fmt.Errorf("%q: limit %q is not a duration: %s", text, lim, sloForm)
	}
	if d < time.Millisecond || d > time.Minute {
		return SLO{}, fmt.Errorf("%q: limit %s is out of range: %s", text, d, sloForm)
	}
	if q == "p999" {
		q = "p99.9"
	}
	return SLO{Percentile: q, Limit: d, Text: fmt.Sprintf("%s <= %s", q, fmtMs(d))}, nil
}

// Of is the SLO's percentile of a run, in ms.
func (s SLO) Of(r *analysis.Result) float64 { return percentiles[s.Percentile](r) }

// LimitMs is the limit in ms.
func (s SLO) LimitMs() float64 { return float64(s.Limit) / float64(time.Millisecond) }

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%g ms", float64(d)/float64(time.Millisecond))
}
