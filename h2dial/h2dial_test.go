package h2dial

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
)

// h2cServer is a real HTTP/2 server over cleartext (prior knowledge) on loopback.
func h2cServer(t *testing.T, maxStreams uint32, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	return testutil.H2C(t, maxStreams, h)
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }

func TestModes(t *testing.T) {
	srv := h2cServer(t, 1000, ok)
	cases := []struct {
		mode      Mode
		c         int
		wantConns int
	}{
		{Distinct, 7, 7}, // one transport, so one connection, per worker
		{Shared, 50, 1},  // one transport; 50 streams fit under the server's 1000
	}
	for _, c := range cases {
		r, err := Run(context.Background(), Options{URL: srv.URL + "/", Mode: c.mode, Concurrency: c.c, Duration: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.ConnectionsOpened != c.wantConns {
			t.Errorf("%s c=%d: %d connections, want %d", c.mode, c.c, r.ConnectionsOpened, c.wantConns)
		}
		var perConn int64
		for _, cs := range r.Connections {
			perConn += cs.Requests
		}
		// Every completed request (plus the shared transport's first one) is credited to a connection.
		if perConn < r.Requests || r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors, %d credited to connections", c.mode, r.Requests, r.Errors, perConn)
		}
	}
}

func TestSharedDialsAtServerCap(t *testing.T) {
	srv := h2cServer(t, 5, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		ok(w, r)
	})
	r, err := Run(context.Background(), Options{URL: srv.URL + "/", Mode: Shared, Concurrency: 30, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConnectionsOpened < 2 {
		t.Fatalf("a shared transport over a 5-stream cap with 30 workers opened %d connection", r.ConnectionsOpened)
	}
}

// TestOpenLoopHasNoCoordinatedOmission stalls the server once for 300 ms. A closed-loop client
// records one slow request; an open-loop one records every request that fell due during the
// stall as late, because latency counts from when a request was due.
func TestOpenLoopHasNoCoordinatedOmission(t *testing.T) {
	var n atomic.Int64
	srv := h2cServer(t, 1000, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 20 {
			time.Sleep(300 * time.Millisecond)
		}
		ok(w, r)
	})
	open, err := Run(context.Background(), Options{URL: srv.URL + "/", Mode: Shared, Concurrency: 1, QPS: 200, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if open.Latency.P90 < 50 {
		t.Fatalf("open loop p90 %.1f ms: the requests that waited behind the stall were not counted as late", open.Latency.P90)
	}
	if open.Requests < 150 {
		t.Fatalf("open loop at 200 qps sent %d requests in 1s", open.Requests)
	}
	// With one worker stuck behind the stall, the requests that fell due went out late: the
	// send lag says the client, not only the server, was behind.
	if open.SendLag == nil || open.SendLag.Max < 200 {
		t.Fatalf("open loop send lag %+v: the requests due during the 300 ms stall were sent late", open.SendLag)
	}
	n.Store(0)
	closed, err := Run(context.Background(), Options{URL: srv.URL + "/", Mode: Shared, Concurrency: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if closed.Latency.P90 > 50 {
		t.Fatalf("closed loop p90 %.1f ms with a single slow request", closed.Latency.P90)
	}
	if closed.SendLag != nil {
		t.Fatalf("closed loop reports a send lag %+v: nothing was due", closed.SendLag)
	}
}

func TestSlowWorkersReportedApart(t *testing.T) {
	srv := h2cServer(t, 1000, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/slow") {
			time.Sleep(200 * time.Millisecond)
		}
		ok(w, r)
	})
	r, err := Run(context.Background(), Options{URL: srv.URL + "/fast", SlowURL: srv.URL + "/slow", SlowWorkers: 2,
		Mode: Shared, Concurrency: 4, Duration: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Slow == nil || r.Slow.Requests == 0 || r.Slow.Latency.P50 < 190 || r.Latency.P99 > 100 {
		t.Fatalf("slow %+v; fast p99 %.1f ms", r.Slow, r.Latency.P99)
	}
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	_, err := Run(context.Background(), Options{URL: "http://192.0.2.1:80/", Concurrency: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Fatalf("err = %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, o := range []Options{
		{},
		{URL: "ftp://x/", Duration: time.Second},
		{URL: "http://127.0.0.1:1/", Mode: "pooled", Duration: time.Second},
		{URL: "http://127.0.0.1:1/", Concurrency: -1, Duration: time.Second},
		{URL: "http://127.0.0.1:1/"},
		{URL: "http://127.0.0.1:1/", Duration: time.Second, Mode: Distinct, SlowURL: "http://127.0.0.1:1/s"},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestHistogramPrecision(t *testing.T) {
	var h Histogram
	for us := 1; us <= 100000; us++ {
		h.Record(time.Duration(us) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		got := float64(h.Quantile(q)) / float64(time.Microsecond)
		want := q * 100000
		if math.Abs(got-want)/want > 1.0/64+1e-3 {
			t.Errorf("q%.3f = %.0fus, want %.0fus within 1/64", q, got, want)
		}
	}
	if h.Summary().Max != 100 || h.Count() != 100000 {
		t.Errorf("summary %+v", h.Summary())
	}
}

// TestUploads: with BodyBytes every fast request is a POST carrying that many bytes, each one
// whole, so the server receives requests x bytes.
func TestUploads(t *testing.T) {
	var posts, bytesIn atomic.Int64
	srv := h2cServer(t, 1000, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost && n == 100000 && r.ContentLength == 100000 {
			posts.Add(1)
		}
		bytesIn.Add(n)
		_, _ = w.Write([]byte("ok"))
	})
	res, err := Run(context.Background(), Options{URL: srv.URL + "/", Mode: Shared, Concurrency: 4, Duration: 300 * time.Millisecond, BodyBytes: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || posts.Load() < res.Requests || bytesIn.Load() < res.Requests*100000 {
		t.Fatalf("%d requests, server saw %d whole POSTs and %d bytes", res.Requests, posts.Load(), bytesIn.Load())
	}
}
