// Package h2dial is a dialing HTTP/2 load client. With Mode Shared every worker uses one
// golang.org/x/net/http2 Transport, whose pool opens a new connection whenever its connections
// are at the server's SETTINGS_MAX_CONCURRENT_STREAMS: the behaviour of a "smart" Go client.
// With Mode Distinct each worker has its own Transport and so its own connection, like a
// population of independent clients.
//
// Runs are closed loop by default (each worker sends its next request when the previous one
// is done). With QPS set they are open loop: requests are due at a constant rate and latency is
// measured from the moment a request was due, not from when a worker got round to it, so a
// slow server cannot hide its queue (no coordinated omission).
package h2dial

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Mode is the transport layout.
type Mode string

// Transport layouts.
const (
	Shared   Mode = "shared"
	Distinct Mode = "distinct"
)

// Defaults.
const (
	DefaultConcurrency = 200
	DefaultDuration    = 60 * time.Second
	DefaultSlowWorkers = 5
)

// Options configure a run.
type Options struct {
	// URL is the target, http:// for h2c (prior knowledge) or https:// for h2 over TLS.
	URL string
	// Mode is Shared or Distinct.
	Mode Mode
	// Concurrency is the number of workers (closed loop) or the most requests in flight (open loop).
	Concurrency int
	// Duration is how long to send.
	Duration time.Duration
	// QPS is the total target rate; 0 runs closed loop.
	QPS float64
	// SlowURL and SlowWorkers add workers on the shared transport that request SlowURL; their
	// latencies are reported apart from the fast workers'.
	SlowURL     string
	SlowWorkers int
	// Header is sent with every request.
	Header http.Header
	// Timeout bounds each request; 0 means only the run's end does.
	Timeout time.Duration
	// AllowRemote lets the client send to non-loopback addresses.
	AllowRemote bool
	// InsecureTLS skips certificate checks for https targets.
	InsecureTLS bool
	// ColdStart starts every worker at once on a transport that has not yet talked to the
	// server. Go's transport assumes 100 streams per connection until the server's SETTINGS
	// arrive, so a cold burst of more than 100 requests opens extra connections whatever the
	// server's limit. By default a shared transport first sends one request, so it knows the
	// server's limit before the workers start, as a long-running client does.
	ColdStart bool
	// DialContext replaces the TCP dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// BodyBytes makes every fast request a POST uploading a body of that many bytes (0: GET):
	// how uploads meet the server's receive windows.
	BodyBytes int
	// LongStream makes each request a long-lived stream (an event stream such as go-httpbin's
	// /sse, a long poll), read as it arrives and opened again as soon as it ends (streams.go):
	// Requests then counts the messages received and Latency their delay, and the result
	// records each stream on its connection.
	LongStream bool
}

func (o *Options) check() (*url.URL, error) {
	if o.URL == "" {
		return nil, errors.New("url is required")
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want http://host[:port]/path (h2c) or https://...", o.URL)
	}
	if o.Mode == "" {
		o.Mode = Shared
	}
	if o.Mode != Shared && o.Mode != Distinct {
		return nil, fmt.Errorf("mode %q: allowed shared, distinct", o.Mode)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > 100000 {
		return nil, fmt.Errorf("concurrency %d: allowed 1..100000", o.Concurrency)
	}
	if o.Duration <= 0 {
		return nil, fmt.Errorf("duration %s: must be positive", o.Duration)
	}
	if o.QPS < 0 {
		return nil, fmt.Errorf("qps %g: must be 0 (closed loop) or positive", o.QPS)
	}
	if o.BodyBytes < 0 || o.BodyBytes > 1<<30 {
		return nil, fmt.Errorf("body bytes %d: allowed 0..1073741824", o.BodyBytes)
	}
	if o.LongStream && (o.QPS > 0 || o.BodyBytes > 0 || o.SlowURL != "") {
		return nil, errors.New("long streams are held open, not paced: the long-stream mode takes no qps, body bytes or slow workers")
	}
	if o.SlowURL != "" {
		if o.Mode != Shared {
			return nil, errors.New("slow workers share the fast workers' transport: they need mode shared")
		}
		if o.SlowWorkers == 0 {
			o.SlowWorkers = DefaultSlowWorkers
		}
		if o.SlowWorkers < 1 || o.SlowWorkers > 10000 {
			return nil, fmt.Errorf("slow workers %d: allowed 1..10000", o.SlowWorkers)
		}
		if _, err := url.Parse(o.SlowURL); err != nil {
			return nil, fmt.Errorf("slow url %q: %v", o.SlowURL, err)
		}
	}
	return u, nil
}

// Run drives load until the duration has passed or ctx is cancelled, and returns what happened.
// A cancelled run still returns the result of the time it ran.
func Run(ctx context.Context, o Options) (*Result, error) {
	u, err := o.check()
	if err != nil {
		return nil, err
	}
	conns := newConnTable(&o)
	var tlsCfg *tls.Config
	if u.Scheme == "https" {
		tlsCfg = &tls.Config{NextProtos: []string{"h2"}, InsecureSkipVerify: o.InsecureTLS} //nolint:gosec // opt-in
	}
	newTransport := func() *http2.Transport {
		return &http2.Transport{
			AllowHTTP:          true,
			DisableCompression: true, // no gzip: a load generator wants the bytes the server sent, unwrapped
			TLSClientConfig:    tlsCfg,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				return conns.dialTLS(ctx, network, addr, tlsCfg)
			},
		}
	}
	var shared *http2.Transport
	if o.Mode == Shared {
		shared = newTransport()
		defer shared.CloseIdleConnections()
	}

	if shared != nil && !o.ColdStart {
		if err := prime(ctx, shared, o); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	conns.start = start
	runCtx, cancel := context.WithDeadline(ctx, start.Add(o.Duration))
	defer cancel()
	traceCtx := httptrace.WithClientTrace(runCtx, conns.trace())

	var upload []byte // one buffer of zeros every upload reads from
	if o.BodyBytes > 0 {
		upload = make([]byte, o.BodyBytes)
	}
	workers := make([]*worker, o.Concurrency)
	shards := make([]*lockedHist, min(histShards, o.Concurrency))
	lags := make([]*lockedHist, len(shards))
	for i := range shards {
		shards[i], lags[i] = &lockedHist{}, &lockedHist{}
	}
	var wg sync.WaitGroup
	var due chan time.Time
	var unsent atomic.Int64
	if o.QPS > 0 {
		due = make(chan time.Time, o.Concurrency*4)
		go pace(runCtx, start, o.QPS, due)
	}
	for i := range workers {
		tr := shared
		if tr == nil {
			tr = newTransport()
			defer tr.CloseIdleConnections()
		}
		w := &worker{rt: tr, url: o.URL, header: o.Header, timeout: o.Timeout, hist: shards[i%len(shards)], body: upload}
		if o.LongStream {
			w.streams = conns
		}
		if due != nil {
			w.lag = lags[i%len(lags)]
		}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(traceCtx, due)
		}()
	}
	var slow []*worker
	if o.SlowURL != "" {
		for range o.SlowWorkers {
			w := &worker{rt: shared, url: o.SlowURL, header: o.Header, timeout: o.Timeout, hist: &lockedHist{}}
			slow = append(slow, w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(traceCtx, nil)
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	if due != nil {
		// Requests that were due but never sent: the client could not keep up with the rate.
		for range due {
			unsent.Add(1)
		}
	}

	res := &Result{
		URL: o.URL, Mode: string(o.Mode), Workers: o.Concurrency, TargetQPS: o.QPS,
		ElapsedS: elapsed.Seconds(), Unsent: unsent.Load(),
		ConnectionsOpened: conns.opened(), Connections: conns.stats(),
		Interrupted: ctx.Err() != nil, LongStream: o.LongStream,
	}
	res.fill(workers, elapsed)
	if o.LongStream {
		res.Streams = conns.uses(min(elapsed, o.Duration))
	}
	// Close every connection the run opened, busy or idle, as a client process does when it
	// exits: CloseIdleConnections leaves one whose last stream was still being torn down open
	// on the server until its idle timeout, where it would sit on a pod through the next
	// measurement.
	conns.closeAll()
	if len(slow) > 0 {
		sr := &Result{URL: o.SlowURL, Workers: len(slow)}
		sr.fill(slow, elapsed)
		res.Slow = &SlowResult{URL: o.SlowURL, Workers: len(slow), Requests: sr.Requests, Errors: sr.Errors, Latency: sr.Latency}
	}
	return res, nil
}

// prime sends one request on the shared transport so it has the server's SETTINGS before the
// workers start.
func prime(ctx context.Context, tr http.RoundTripper, o Options) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return err
	}
	for k, v := range o.Header {
		req.Header[k] = v
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("first request to %s: %w", o.URL, err)
	}
	if !o.LongStream { // a long stream's headers are enough: its body would last the run
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.Body.Close()
}

// pace emits the due time of each request at a constant rate until ctx ends, then closes due.
// It wakes at most every millisecond and emits every request that has come due since, so
// high rates cost no more timer wake-ups than low ones.
func pace(ctx context.Context, start time.Time, qps float64, due chan<- time.Time) {
	defer close(due)
	interval := time.Duration(float64(time.Second) / qps)
	tick := time.NewTicker(max(time.Millisecond, min(interval, 10*time.Millisecond)))
	defer tick.Stop()
	next := start
	for {
		now := time.Now()
		for !next.After(now) {
			select {
			case due <- next:
			case <-ctx.Done():
				return
			}
			next = next.Add(interval)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// worker sends requests one at a time and records their outcomes in its own counters.
type worker struct {
	rt      http.RoundTripper
	url     string
	header  http.Header
	timeout time.Duration
	body    []byte // the upload of each request, nil for GET

	// streams records each stream on its connection in the long-stream mode (nil otherwise).
	streams   *connTable
	opened    int64            // long-stream mode: the streams opened
	ends      map[string]int64 // long-stream mode: how streams ended before the run did
	hist      *lockedHist      // shared with other workers: a histogram each would be megabytes of cache misses at 500 workers
	lag       *lockedHist      // open loop: how late each request was sent after it was due
	ok200     int64            // the common status, counted without a map
	requests  int64
	errors    int64
	cancelled int64
	unsent    int64
	status    map[int]int64
	errKinds  map[string]int64
}

func (w *worker) run(ctx context.Context, due <-chan time.Time) {
	w.status = map[int]int64{}
	w.errKinds = map[string]int64{}
	buf := make([]byte, 32<<10)
	method := http.MethodGet
	if w.body != nil {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, w.url, nil)
	if err != nil {
		w.errors++
		w.errKinds[err.Error()]++
		return
	}
	for k, v := range w.header {
		req.Header[k] = v
	}
	if w.body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	for {
		var sent time.Time
		if due != nil {
			d, ok := <-due
			if !ok {
				return
			}
			if ctx.Err() != nil {
				w.unsent++ // due, but the run ended before a worker was free
				continue
			}
			sent = d
			w.lag.record(time.Since(d))
		} else {
			if ctx.Err() != nil {
				return
			}
			sent = time.Now()
		}
		w.do(ctx, req, sent, buf)
	}
}

func (w *worker) do(ctx context.Context, req *http.Request, sent time.Time, buf []byte) {
	if w.streams != nil {
		w.stream(ctx, req)
		return
	}
	r := req
	if w.timeout > 0 {
		c, cancel := context.WithTimeout(ctx, w.timeout)
		defer cancel()
		r = req.WithContext(c)
	}
	if w.body != nil {
		if r == req {
			r = req.WithContext(req.Context())
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(w.body)), int64(len(w.body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(w.body)), nil }
	}
	resp, err := w.rt.RoundTrip(r)
	if err == nil {
		_, err = io.CopyBuffer(io.Discard, resp.Body, buf)
		resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			w.cancelled++ // cut off by the end of the run, not a failure of the server
			return
		}
		w.errors++
		w.errKinds[errorKind(err)]++
		return
	}
	w.requests++
	if resp.StatusCode == http.StatusOK {
		w.ok200++
	} else {
		w.status[resp.StatusCode]++
	}
	if resp.StatusCode >= 400 {
		w.errors++
	}
	w.hist.record(time.Since(sent))
}

func errorKind(err error) string {
	var se http2.StreamError
	if errors.As(err, &se) {
		return "stream error " + se.Code.String()
	}
	var ga http2.GoAwayError
	if errors.As(err, &ga) {
		return "goaway " + ga.ErrCode.String()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
