// Package stats reads Envoy's Prometheus exposition (/stats/prometheus) from gateway pods, as
// Istio's proxy names it, into snapshots; takes the difference of two snapshots; and finds the
// names that differ between installations (HCM prefix, listener address, upstream cluster)
// by looking at what the proxy reports rather than assuming them.
package stats

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
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

// Parse reads a Prometheus text exposition. Every value must be a number Envoy can report:
// finite, within an unsigned 64-bit counter's magnitude, and not negative for a counter or a
// histogram's sum; a NaN or an infinity would poison every sum and spread computed from it.
func Parse(r io.Reader) (fams map[string]*dto.MetricFamily, err error) {
	// prometheus/common's text parser dereferences a nil metric on some malformed lines (one
	// that opens with "{}" before any metric name; found by FuzzParseSnapshot). Its state is
	// local to this call, so the panic is the parser's way of saying "malformed".
	defer func() {
		if v := recover(); v != nil {
			fams, err = nil, fmt.Errorf("parsing /stats/prometheus: malformed exposition (the text parser gave up: %v)", v)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err = p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /stats/prometheus: %w", err)
	}
	if err := checkValues(fams); err != nil {
		return nil, fmt.Errorf("parsing /stats/prometheus: %w", err)
	}
	Normalize(fams)
	return fams, nil
}

// maxValue is the largest magnitude a value may have: Envoy's counters and gauges are unsigned
// 64-bit integers. The bound also keeps sums over many series finite.
const maxValue = 1 << 64

// checkValues rejects a value no Envoy reports, naming the series and the allowed range.
func checkValues(fams map[string]*dto.MetricFamily) error {
	names := slices.Sorted(maps.Keys(fams))
	for _, name := range names {
		for _, m := range fams[name].GetMetric() {
			check := func(what string, v float64, lo float64) error {
				if math.IsNaN(v) || v < lo || v > maxValue {
					return fmt.Errorf("%s%s: %s %v is out of range (allowed %g..%g)", name, labelText(m), what, v, lo, float64(maxValue))
				}
				return nil
			}
			var err error
			switch {
			case m.Counter != nil:
				err = check("counter", m.GetCounter().GetValue(), 0)
			case m.Gauge != nil:
				err = check("gauge", m.GetGauge().GetValue(), -maxValue)
			case m.Untyped != nil:
				err = check("value", m.GetUntyped().GetValue(), -maxValue)
			case m.Histogram != nil:
				// Bucket counts are integers already; the text parser drops a le="NaN" bucket.
				err = check("histogram sum", m.GetHistogram().GetSampleSum(), 0)
			case m.Summary != nil:
				err = check("summary sum", m.GetSummary().GetSampleSum(), 0)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// labelText renders a series' labels as the exposition writes them: {a="b",c="d"}.
func labelText(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
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
	out := slices.Sorted(maps.Keys(s.Families))
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
		// In bound order: a page rebuilt from a Prometheus query lists the buckets as the
		// query returned the series, sorted by the le label as text ("1000" before "25").
		bks := slices.SortedFunc(slices.Values(h.GetBucket()), func(x, y *dto.Bucket) int { return cmp.Compare(x.GetUpperBound(), y.GetUpperBound()) })
		for i, bk := range bks {
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
// histogram_quantile does. NaN when empty. A quantile that falls in the +Inf bucket is that
// bucket's lower bound, the highest finite one, as in PromQL: interpolating towards +Inf gave
// +Inf (or NaN for q = 0), which no report or JSON encoder can take.
func (b Buckets) Quantile(q float64) float64 {
	if b.Count == 0 || len(b.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * b.Count
	lo, prev := 0.0, 0.0
	highest := math.NaN() // the highest finite bound passed so far
	for i, c := range b.Cum {
		if math.IsInf(b.Bounds[i], +1) {
			return highest
		}
		if c >= rank && c > prev {
			if i == 0 && b.Bounds[0] <= 0 {
				return b.Bounds[0] // PromQL: no interpolation below a bound of 0 or less
			}
			return lo + (b.Bounds[i]-lo)*(rank-prev)/(c-prev)
		}
		lo, prev, highest = b.Bounds[i], c, b.Bounds[i]
	}
	return highest
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
		n, ok := workerID(id)
		if !ok {
			continue
		}
		out[n] = s.Sum(name, Labels{"listener_address": addr})
	}
	return out
}
