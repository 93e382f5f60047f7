package model

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// StatKind is Envoy's stat type.
type StatKind int

// Stat kinds.
const (
	Counter StatKind = iota
	Gauge
	Hist
)

// Label is one tag that Istio's tag extraction lifts out of a stat name.
type Label struct{ Name, Value string }

// Stat is one Envoy statistic. Name is the full admin name (what /stats prints); Tagged is
// the name after Istio's tag extraction, which becomes the Prometheus name with an "envoy_"
// prefix and dots turned into underscores, and Labels are the extracted tags.
type Stat struct {
	Name   string
	Tagged string
	Labels []Label
	Kind   StatKind
	v      atomic.Int64
	h      *histogram
	read   func() int64 // a stat computed when read, instead of v
}

// SetRead makes the stat computed when read (a worker's busy time, a pod's memory).
func (s *Stat) SetRead(f func() int64) { s.read = f }

// Inc adds one.
func (s *Stat) Inc() { s.v.Add(1) }

// Dec subtracts one (gauges).
func (s *Stat) Dec() { s.v.Add(-1) }

// Add adds n.
func (s *Stat) Add(n int64) { s.v.Add(n) }

// Set sets a gauge.
func (s *Stat) Set(n int64) { s.v.Store(n) }

// Value reads the value.
func (s *Stat) Value() int64 {
	if s.read != nil {
		return s.read()
	}
	return s.v.Load()
}

// Observe records a histogram sample (in the histogram's unit, milliseconds for Envoy's).
func (s *Stat) Observe(v float64) { s.h.observe(v) }

// Snapshot returns a histogram's cumulative counts per bound (EnvoyBuckets), its count and sum.
func (s *Stat) Snapshot() (cum []uint64, count uint64, sum float64) { return s.h.snapshot() }

// Quantile estimates a histogram's quantile q (0..1) as Envoy's admin does.
func (s *Stat) Quantile(q float64) float64 { return s.h.quantile(q) }

// EnvoyBuckets are Envoy's default histogram bucket bounds.
var EnvoyBuckets = envoyBuckets

// envoyBuckets are Envoy's default histogram bucket bounds.
var envoyBuckets = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
	30000, 60000, 300000, 600000, 1800000, 3600000}

// histogram keeps per-bucket counts with atomics so recording never takes a lock.
type histogram struct {
	counts [20]atomic.Uint64 // len(envoyBuckets)+1, the last is +Inf
	sumMu  sync.Mutex
	sum    float64
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(envoyBuckets, v)
	h.counts[i].Add(1)
	h.sumMu.Lock()
	h.sum += v
	h.sumMu.Unlock()
}

// snapshot returns cumulative counts per bound, the total count and the sum.
func (h *histogram) snapshot() (cum []uint64, count uint64, sum float64) {
	cum = make([]uint64, len(envoyBuckets))
	var run uint64
	for i := range envoyBuckets {
		run += h.counts[i].Load()
		cum[i] = run
	}
	count = run + h.counts[len(envoyBuckets)].Load()
	h.sumMu.Lock()
	sum = h.sum
	h.sumMu.Unlock()
	return cum, count, sum
}

// quantile estimates quantile q (0..1) by linear interpolation inside the bucket, as Envoy's
// admin output does from its own histogram.
func (h *histogram) quantile(q float64) float64 {
	cum, count, _ := h.snapshot()
	if count == 0 {
		return math.NaN()
	}
	rank := q * float64(count)
	lo := 0.0
	prev := uint64(0)
	for i, c := range cum {
		if float64(c) >= rank && c > prev {
			frac := (rank - float64(prev)) / float64(c-prev)
			return lo + frac*(envoyBuckets[i]-lo)
		}
		lo, prev = envoyBuckets[i], c
	}
	return envoyBuckets[len(envoyBuckets)-1]
}

// Store holds a pod's statistics, named as Envoy with Istio's tag extraction names them: the one
// naming of the socket emulator's pods and the simulator's.
type Store struct {
	mu     sync.RWMutex
	stats  []*Stat
	byName map[string]*Stat
	// before are run as All begins: stats kept from a worker's clock (its event loop's) are
	// brought up to now before anyone reads them.
	before []func()
}

// BeforeRead runs f each time the stats are read, before they are.
func (st *Store) BeforeRead(f func()) {
	st.mu.Lock()
	st.before = append(st.before, f)
	st.mu.Unlock()
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{byName: map[string]*Stat{}} }

func (st *Store) get(kind StatKind, name, tagged string, labels []Label) *Stat {
	st.mu.RLock()
	s := st.byName[name]
	st.mu.RUnlock()
	if s != nil {
		return s
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if s = st.byName[name]; s != nil {
		return s
	}
	s = &Stat{Name: name, Tagged: tagged, Labels: labels, Kind: kind}
	if kind == Hist {
		s.h = &histogram{}
	}
	st.stats = append(st.stats, s)
	st.byName[name] = s
	return s
}

// Counter returns the counter with this name, creating it.
func (st *Store) Counter(name, tagged string, labels ...Label) *Stat {
	return st.get(Counter, name, tagged, labels)
}

// Gauge returns the gauge with this name, creating it.
func (st *Store) Gauge(name, tagged string, labels ...Label) *Stat {
	return st.get(Gauge, name, tagged, labels)
}

// Histogram returns the histogram with this name, creating it.
func (st *Store) Histogram(name, tagged string, labels ...Label) *Stat {
	return st.get(Hist, name, tagged, labels)
}

// All returns the stats sorted by name.
func (st *Store) All() []*Stat {
	st.mu.RLock()
	before := st.before
	st.mu.RUnlock()
	for _, f := range before {
		f()
	}
	st.mu.RLock()
	out := append([]*Stat(nil), st.stats...)
	st.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ResetCounters zeroes counters and histograms, leaving gauges, as Envoy's POST /reset_counters does.
func (st *Store) ResetCounters() {
	for _, s := range st.All() {
		switch s.Kind {
		case Counter:
			s.v.Store(0)
		case Hist:
			for i := range s.h.counts {
				s.h.counts[i].Store(0)
			}
			s.h.sumMu.Lock()
			s.h.sum = 0
			s.h.sumMu.Unlock()
		}
	}
}

// PromName is the Prometheus metric name Istio's Envoy gives a tag-extracted stat name.
func PromName(tagged string) string {
	var b strings.Builder
	b.WriteString("envoy_")
	for _, r := range tagged {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Stat name builders, one per Envoy scope, so every component names its stats the same way.

// HCMStat names a stat of the HttpConnectionManager with this stat prefix. Istio's stat prefix
// ends with ";" in the admin names, which the tag extraction strips.
func HCMStat(st *Store, kind StatKind, prefix, name string) *Stat {
	return st.get(kind, "http."+prefix+";."+name, "http."+name, []Label{{"http_conn_manager_prefix", prefix}})
}

// ListenerStat names a listener stat (no ";").
func ListenerStat(st *Store, kind StatKind, addr, name string) *Stat {
	return st.get(kind, "listener."+addr+"."+name, "listener."+name, []Label{{"listener_address", addr}})
}

// WorkerStat names a per-worker listener stat. Istio has no tag for the worker id, so the
// worker stays in the Prometheus name: envoy_listener_worker_0_downstream_cx_total.
func WorkerStat(st *Store, kind StatKind, addr string, worker int, name string) *Stat {
	w := "worker_" + strconv.Itoa(worker)
	return st.get(kind, "listener."+addr+"."+w+"."+name, "listener."+w+"."+name, []Label{{"listener_address", addr}})
}

// ClusterStat names an upstream cluster stat; Istio cluster names also end with ";".
func ClusterStat(st *Store, kind StatKind, cluster, name string) *Stat {
	return st.get(kind, "cluster."+cluster+";."+name, "cluster."+name, []Label{{"cluster_name", cluster}})
}

// PlainStat names a stat without tags (server.*, listener_manager.*, http2.*).
func PlainStat(st *Store, kind StatKind, name string) *Stat {
	return st.get(kind, name, name, nil)
}

// LabStat names a stat only the lab's pools have (the emulator's and the simulator's, not
// Envoy's); they live under "igwlab." so they can never be mistaken for Envoy's.
func LabStat(st *Store, kind StatKind, name string, labels ...Label) *Stat {
	full := "igwlab." + name
	for _, l := range labels {
		full += "." + l.Name + "_" + l.Value
	}
	return st.get(kind, full, "igwlab."+name, labels)
}
