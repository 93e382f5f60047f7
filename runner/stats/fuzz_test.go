package stats

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzParseSnapshot feeds arbitrary bytes to the /stats/prometheus parser and everything the
// runner does with a snapshot afterwards (discovering the names, extracting a pod, taking a
// delta, reading quantiles). Nothing may panic. A rejected exposition names the pod; an
// accepted one holds only finite numbers, so every extracted figure is finite, a pod's delta
// against itself is zero and not a restart, and quantiles lie within the histogram's finite
// bounds (NaN only when there is none to answer with).
//
// Seeds: the files in testdata/ and the committed entries under testdata/fuzz/FuzzParseSnapshot.
func FuzzParseSnapshot(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.prom")
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseSnapshot("pod-0", time.Unix(0, 0), raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pod pod-0: ") {
				t.Fatalf("error does not name the pod: %v", err)
			}
			return
		}
		names, _ := Discover([]Snapshot{s}, "httpbin")
		p := Extract(s, names)
		checkFinite(t, "pod", reflect.ValueOf(p))
		d, restarted := Delta(p, p)
		if restarted {
			t.Fatal("a pod's delta against itself reads as a restart")
		}
		if d.RqTotal != 0 || d.CxTotal != 0 || d.RqTime.Count != 0 {
			t.Fatalf("a pod's delta against itself is not zero: %+v", d)
		}
		for _, v := range d.WorkerCx {
			if v != 0 {
				t.Fatalf("a worker's delta against itself is %v", v)
			}
		}
		b := p.RqTime
		lo, hi := 0.0, math.NaN() // the lowest bound (or 0) and the highest finite bound
		for _, x := range b.Bounds {
			lo = math.Min(lo, x)
			if !math.IsInf(x, 0) && !(x <= hi) {
				hi = x
			}
		}
		for _, q := range []float64{0, 0.5, 0.99, 1} {
			v := b.Quantile(q)
			switch {
			case b.Count == 0 || len(b.Bounds) == 0:
				if !math.IsNaN(v) {
					t.Fatalf("quantile %v of an empty histogram is %v", q, v)
				}
			case math.IsNaN(v):
				if !math.IsNaN(hi) {
					t.Fatalf("quantile %v of %+v is NaN", q, b)
				}
			case v < lo || v > hi:
				t.Fatalf("quantile %v of %+v is %v, outside the bounds %v..%v", q, b, v, lo, hi)
			}
		}
		for _, name := range s.Names() {
			_ = s.LabelIntValues(name, "worker")
		}
		_ = s.WorkerSeries("downstream_cx_active", names.Listener)
	})
}

// checkFinite fails on any NaN or infinite float64 in v (a Pod, its maps and buckets).
// Histogram bounds may be +Inf: the last bucket of every Prometheus histogram is.
func checkFinite(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%s = %v", path, f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name == "Bounds" {
				continue
			}
			checkFinite(t, path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkFinite(t, path, v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			checkFinite(t, path, v.MapIndex(k))
		}
	}
}

// TestParseRejectsWhatNoEnvoyReports pins what fuzzing found: each exposition is rejected with
// the series and the allowed range, instead of a panic or a NaN flowing into the analysis.
func TestParseRejectsWhatNoEnvoyReports(t *testing.T) {
	cases := []struct {
		name, raw string
		want      []string
	}{
		{"parser panic", "#0\n{}", []string{"pod p", "malformed exposition"}},
		{"NaN gauge", "# TYPE g gauge\ng{a=\"b\"} NaN\n", []string{"pod p", `g{a="b"}`, "gauge NaN", "allowed"}},
		{"infinite counter", "# TYPE c counter\nc +Inf\n", []string{"c: counter +Inf is out of range", "allowed 0..1.8446744073709552e+19"}},
		{"negative counter", "# TYPE c counter\nc -3\n", []string{"c: counter -3", "allowed 0.."}},
		{"huge untyped", "u 1.7e308\n", []string{"u: value 1.7e+308", "allowed -1.8446744073709552e+19.."}},
		{"NaN histogram sum", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum NaN\nh_count 1\n", []string{"h: histogram sum NaN"}},
	}
	for _, c := range cases {
		_, err := ParseSnapshot("p", time.Unix(0, 0), []byte(c.raw))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
	// Worker ids are plain decimals: "01" and "1abc" are not worker 1.
	s, err := ParseSnapshot("p", time.Unix(0, 0), []byte("envoy_listener_worker_1_downstream_cx_total{listener_address=\"l\"} 5\n"+
		"envoy_listener_worker_01_downstream_cx_total{listener_address=\"l\"} 7\nenvoy_listener_worker_1abc_downstream_cx_total{listener_address=\"l\"} 9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.WorkerSeries("downstream_cx_total", "l"); len(got) != 1 || got[1] != 5 {
		t.Fatalf("worker series %v, want only worker 1 = 5", got)
	}
}

// TestQuantileInOverflowBucket pins the PromQL rule fuzzing found missing: a quantile in the
// +Inf bucket is the highest finite bound, not +Inf (nor NaN for q = 0).
func TestQuantileInOverflowBucket(t *testing.T) {
	b := Buckets{Bounds: []float64{1, 5, math.Inf(1)}, Cum: []float64{1, 2, 10}, Count: 10}
	for _, q := range []float64{0.5, 0.99, 1} {
		if v := b.Quantile(q); v != 5 {
			t.Errorf("quantile %v = %v, want 5 (the highest finite bound)", q, v)
		}
	}
	if v := b.Quantile(0.1); v != 1 {
		t.Errorf("quantile 0.1 = %v, want 1", v)
	}
	only := Buckets{Bounds: []float64{math.Inf(1)}, Cum: []float64{4}, Count: 4}
	if v := only.Quantile(0); !math.IsNaN(v) {
		t.Errorf("a histogram with only the +Inf bucket: quantile %v, want NaN", v)
	}
}
