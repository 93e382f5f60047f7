// Package stats reads Envoy's Prometheus exposition (/stats/prometheus) from gateway pods, as
// Istio's proxy names it, into snapshots; takes the difference of two snapshots; and finds the
// names that differ between installations (HCM prefix, listener address, upstream cluster)
// by looking at what the proxy reports rather than assuming them.
package stats

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one pod's stats at one moment.
type Snapshot struct {
	Pod      string
	At       time.Time
	Families map[string]*dto.MetricFamily
}

// Parse reads a Prometheus text exposition.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /stats/prometheus: %w", err)
	}
	return fams, nil
}

// ParseSnapshot parses raw exposition bytes into a snapshot of pod at t.
func ParseSnapshot(pod string, t time.Time, raw []byte) (Snapshot, error) {
	fams, err := Parse(bytes.NewReader(raw))
	if err != nil {
		return Snapshot{}, fmt.Errorf("pod %s: %w", pod, err)
	}
	return Snapshot{Pod: pod, At: t, Families: fams}, nil
}

// Labels is a label matcher: every listed label must have this value.
type Labels map[string]string

func matches(m *dto.Metric, want Labels) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// Has reports whether the snapshot holds a series of name matching want.
func (s Snapshot) Has(name string, want Labels) bool {
	f := s.Families[name]
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		if matches(m, want) {
			return true
		}
	}
	return false
}

// Sum adds up every series of name matching want (0 when there is none).
func (s Snapshot) Sum(name string, want Labels) float64 {
	f := s.Families[name]
	if f == nil {
		return 0
	}
	var total float64
	for _, m := range f.GetMetric() {
		if matches(m, want) {
			total += value(m)
		}
	}
	return total
}

// LabelValues lists the values of label on series of name, with each series' value.
func (s Snapshot) LabelValues(name, label string) map[string]float64 {
	out := map[string]float64{}
	f := s.Families[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += value(m)
			}
		}
	}
	return out
}

// Names returns the metric names in the snapshot, sorted.
func (s Snapshot) Names() []string {
	out := make([]string, 0, len(s.Families))
	for n := range s.Families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Histogram returns the merged cumulative buckets of name matching want.
func (s Snapshot) Histogram(name string, want Labels) Buckets {
	f := s.Families[name]
	var b Buckets
	if f == nil {
		return b
	}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil || !matches(m, want) {
			continue
		}
		b.Count += float64(h.GetSampleCount())
		b.Sum += h.GetSampleSum()
		for i, bk := range h.GetBucket() {
			if i >= len(b.Bounds) {
				b.Bounds = append(b.Bounds, bk.GetUpperBound())
				b.Cum = append(b.Cum, 0)
			}
			b.Cum[i] += float64(bk.GetCumulativeCount())
		}
	}
	return b
}

// Buckets are cumulative histogram buckets.
type Buckets struct {
	Bounds []float64
	Cum    []float64
	Count  float64
	Sum    float64
}

// Sub returns b minus earlier (for counters of one pod between two snapshots).
func (b Buckets) Sub(earlier Buckets) Buckets {
	if len(earlier.Bounds) != len(b.Bounds) || earlier.Count > b.Count {
		return b // a reset (pod restart): the later reading is the whole window
	}
	out := Buckets{Bounds: b.Bounds, Cum: make([]float64, len(b.Cum)), Count: b.Count - earlier.Count, Sum: b.Sum - earlier.Sum}
	for i := range b.Cum {
		out.Cum[i] = b.Cum[i] - earlier.Cum[i]
	}
	return out
}

// Add merges o into b.
func (b Buckets) Add(o Buckets) Buckets {
	if len(b.Bounds) == 0 {
		return o
	}
	if len(o.Bounds) != len(b.Bounds) {
		return b
	}
	out := Buckets{Bounds: b.Bounds, Cum: make([]float64, len(b.Cum)), Count: b.Count + o.Count, Sum: b.Sum + o.Sum}
	for i := range b.Cum {
		out.Cum[i] = b.Cum[i] + o.Cum[i]
	}
	return out
}

// Quantile estimates quantile q by linear interpolation within the bucket, as PromQL's
// histogram_quantile does. NaN when empty.
func (b Buckets) Quantile(q float64) float64 {
	if b.Count == 0 || len(b.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * b.Count
	lo, prev := 0.0, 0.0
	for i, c := range b.Cum {
		if c >= rank && c > prev {
			return lo + (b.Bounds[i]-lo)*(rank-prev)/(c-prev)
		}
		lo, prev = b.Bounds[i], c
	}
	return b.Bounds[len(b.Bounds)-1]
}

// WorkerSeries returns, for each worker id, the value of the per-worker stat (e.g.
// "downstream_cx_total") on listener addr. Istio keeps the worker in the metric name:
// envoy_listener_worker_3_downstream_cx_total{listener_address="0.0.0.0_80"}.
func (s Snapshot) WorkerSeries(stat, addr string) map[int]float64 {
	out := map[int]float64{}
	for name := range s.Families {
		rest, ok := strings.CutPrefix(name, "envoy_listener_worker_")
		if !ok {
			continue
		}
		id, tail, ok := strings.Cut(rest, "_")
		if !ok || tail != stat {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(id, "%d", &n); err != nil {
			continue
		}
		out[n] = s.Sum(name, Labels{"listener_address": addr})
	}
	return out
}
