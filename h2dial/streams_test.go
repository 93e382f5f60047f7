package h2dial

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mccutchen/go-httpbin/v2/httpbin"
)

// The long-stream mode holds go-httpbin's event streams, counts their events with each one's
// delay from its stamp, opens the next stream when the server ends one, and records each
// stream on its connection.
func TestLongStreams(t *testing.T) {
	srv := h2cServer(t, 1000, httpbin.New().ServeHTTP)
	r, err := Run(context.Background(), Options{URL: srv.URL + "/sse?count=20&duration=500ms", Mode: Shared, Concurrency: 3,
		Duration: 1200 * time.Millisecond, LongStream: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each worker's stream ends after 0.5 s and the next opens: 3 streams each, 2 of them
	// completed inside the run; 40 events a second per worker.
	if r.StreamsOpened < 6 || r.StreamsOpened > 9 || r.StreamEnds["completed"] < 4 {
		t.Errorf("streams opened %d, ended %v: want about 9, 6 of them completed by the server", r.StreamsOpened, r.StreamEnds)
	}
	if r.Requests < 100 || r.Requests > 150 || r.Errors != 0 {
		t.Errorf("%d events, %d errors: want about 3 x 40/s x 1.2 s = 144", r.Requests, r.Errors)
	}
	if r.Latency.P50 > 50 {
		t.Errorf("event delay p50 %.1f ms on loopback", r.Latency.P50)
	}
	if len(r.Streams) != 1 || int64(len(r.Streams[0].Streams)) != r.StreamsOpened {
		t.Fatalf("connections %+v: want the one shared connection carrying every stream", r.Streams)
	}
	open := 0
	for _, s := range r.Streams[0].Streams {
		if s.Open {
			open++
		}
	}
	if open != 3 {
		t.Errorf("%d streams open at the end, want one per worker", open)
	}
	var text strings.Builder
	_ = r.WriteText(&text)
	if !strings.Contains(text.String(), "long streams: ") {
		t.Errorf("summary %q", text.String())
	}
	if _, err := Run(context.Background(), Options{URL: srv.URL + "/sse", LongStream: true, QPS: 10, Duration: time.Second}); err == nil {
		t.Error("a paced long-stream run was accepted")
	}
}
