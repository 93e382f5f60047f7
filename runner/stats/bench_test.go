package stats_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/stats"
)

// podExposition is one emulated pod's /stats/prometheus after some traffic: the size and
// shape the runner parses twice per pod per scenario and once a second while sampling.
func podExposition(b *testing.B) []byte {
	b.Helper()
	p, err := emulator.Start(emulator.Config{Pods: 1, Workers: 2, WaypointPods: 0, Model: emulator.Model{ServiceTime: 10 * time.Microsecond}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Concurrency: 8, Duration: 200 * time.Millisecond}); err != nil {
		b.Fatal(err)
	}
	resp, err := http.Get(p.Pods()[0].AdminURL() + "/stats/prometheus")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func BenchmarkParseSnapshot(b *testing.B) {
	raw := podExposition(b)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := stats.ParseSnapshot("pod", time.Now(), raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiscoverAndExtract(b *testing.B) {
	s, err := stats.ParseSnapshot("pod", time.Now(), podExposition(b))
	if err != nil {
		b.Fatal(err)
	}
	snaps := []stats.Snapshot{s, s, s, s, s, s} // six pods
	b.ResetTimer()
	for b.Loop() {
		n, err := stats.Discover(snaps, "httpbin")
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range snaps {
			_ = stats.Extract(s, n)
		}
	}
}
