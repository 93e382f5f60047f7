package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/load"
)

// BenchmarkProductionPool runs the size make bench reports: 40 pods of 4 workers under fortio's
// 2,000 connections at 150,000 requests a second, for 60 s of virtual time (BENCH_VIRTUAL
// shortens it for a profile). It reports simulated seconds per wall second and the heap the
// run peaked at.
func BenchmarkProductionPool(b *testing.B) {
	virtual := 60 * time.Second
	if testing.Short() {
		virtual = 5 * time.Second
	}
	for b.Loop() {
		cfg := Defaults
		cfg.Pods, cfg.Workers, cfg.Seed = 40, 4, 1
		p, err := New(cfg, time.Unix(0, 0))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		res, err := p.Load(load.Spec{Kind: "fortio", Concurrency: 2000, QPS: 150000, Path: "/get", Duration: virtual}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t0)
		if res.Requests < int64(0.95*150000*virtual.Seconds()) {
			b.Fatalf("%d requests in %s: the pool fell behind 150,000 a second", res.Requests, virtual)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(virtual.Seconds()/wall.Seconds(), "sim-s/wall-s")
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(res.Requests)/wall.Seconds(), "requests/wall-s")
	}
}
