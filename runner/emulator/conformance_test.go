package emulator

import (
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// The tests behind docs/envoy-conformance.md: each puts the emulated gateway in a situation
// whose outcome Envoy's (or its HTTP/2 library's) source fixes, on a real loopback connection,
// and checks the frames and the stats Envoy would produce.

// Over a cap the client has not acknowledged: the stream alone is refused (oghttp2 OnHeaders,
// nghttp2 session_on_request_headers_received), counted by Envoy's onInvalidFrame.
func TestStreamCapNotYetAcknowledgedRefusesTheStream(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.http2_protocol_options.max_concurrent_streams", "2"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), false) // SETTINGS not acked: the client is "racing" them
	if got := rc.settings[http2.SettingMaxConcurrentStreams]; got != 2 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 2", got)
	}
	for _, id := range []uint32{1, 3, 5} {
		rc.headers(id, "GET", "/delay/1", true) // the first two stay open for a second
	}
	frames, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameRSTStream })
	if err != nil {
		t.Fatalf("no RST_STREAM: %v (frames %+v)", err, frames)
	}
	if last := frames[len(frames)-1]; last.stream != 5 || last.code != http2.ErrCodeRefusedStream {
		t.Fatalf("got RST_STREAM %+v, want stream 5 REFUSED_STREAM", last)
	}
	// The connection lives on: the first two streams complete.
	ends := 0
	if _, err := rc.read(3*time.Second, func(f frameInfo) bool {
		if f.end {
			ends++
		}
		return ends == 2
	}); err != nil {
		t.Fatalf("streams 1 and 3 did not complete after the refusal: %v", err)
	}
	for stat, want := range map[string]int64{
		"http2.stream_refused_errors":                1,
		"http2.tx_reset":                             1,
		hcmName(pod, "downstream_cx_protocol_error"): 0,
		hcmName(pod, "downstream_rq_total"):          2, // a refused stream never reaches the HCM
		hcmName(pod, "downstream_cx_destroy_local"):  0,
		hcmName(pod, "downstream_cx_destroy_remote"): 0,
		hcmName(pod, "downstream_cx_active"):         1,
	} {
		if n := statValue(t, pod, stat); n != want {
			t.Errorf("%s = %d, want %d", stat, n, want)
		}
	}
}

// Over an acknowledged cap: a connection error, PROTOCOL_ERROR ("for parity with nghttp2" in
// oghttp2), which Envoy's connection manager counts in downstream_cx_protocol_error before it
// closes the connection, taking the streams in flight with it.
func TestStreamCapAcknowledgedIsAConnectionError(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.http2_protocol_options.max_concurrent_streams", "2"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	// The ACK must be read before the streams; a SETTINGS round trip makes sure it was.
	_ = rc.fr.WritePing(false, [8]byte{1})
	if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1, 3, 5} {
		rc.headers(id, "GET", "/delay/1", true)
	}
	// Envoy's onInvalidFrame fails the session's callback, so dispatch returns before anything
	// is sent: the client sees the connection close, delayed_close_timeout after the stream,
	// and no GOAWAY or RST_STREAM.
	start := time.Now()
	frames, err := rc.read(3*time.Second, nil)
	if err == nil || isTimeout(err) {
		t.Fatalf("connection still open after the stream over the cap: %v (frames %+v)", err, frames)
	}
	for _, f := range frames {
		if f.typ == http2.FrameGoAway || f.typ == http2.FrameRSTStream {
			t.Fatalf("the gateway sent %+v: with Envoy's callback failing nothing reaches the wire", f)
		}
	}
	if d := time.Since(start); d < delayedCloseTimeout*9/10 {
		t.Fatalf("closed after %s, before delayed_close_timeout (%s)", d, delayedCloseTimeout)
	}
	for stat, want := range map[string]int64{
		hcmName(pod, "downstream_cx_protocol_error"): 1,
		"http2.stream_refused_errors":                0,
		hcmName(pod, "downstream_cx_active"):         0,
	} {
		if n := waitStat(t, pod, stat, want); n != want {
			t.Errorf("%s = %d, want %d", stat, n, want)
		}
	}
}

// ExactConnectionBalancerImpl::pickTargetHandler picks the worker with the fewest connections
// and counts the new one on it under one mutex: connections that arrive at once spread exactly.
func TestExactBalanceBurst(t *testing.T) {
	for round := 0; round < 5; round++ {
		p := testPool(t, Config{Workers: 4}, knobs(t, "listener.connection_balance_config.exact_balance", "{}"))
		pod := p.Pods()[0]
		start := make(chan struct{})
		var wg sync.WaitGroup
		conns := make([]net.Conn, 64)
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := net.DialTimeout("tcp", pod.Addr(), 5*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = c.Write([]byte(clientPreface))
				conns[i] = c
			}()
		}
		close(start)
		wg.Wait()
		deadline := time.Now().Add(5 * time.Second)
		var per []int64
		for {
			per = per[:0]
			var sum int64
			for _, w := range pod.Workers() {
				per = append(per, w.CxTotal.Value())
				sum += w.CxTotal.Value()
			}
			if sum == 64 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, n := range per {
			if n != 16 {
				t.Fatalf("round %d: 64 simultaneous connections over 4 workers landed %v, want 16 each", round, per)
			}
		}
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
}

// With no knob set the gateway runs Envoy 1.35's HTTP/2 defaults (http_option_limits.h:
// 2147483647 streams, 256 MiB windows) and Istio's own connection manager settings
// (listener_builder.go buildHTTPConnectionManager turns stream_idle_timeout off).
func TestDefaultsAsIstioRunsThem(t *testing.T) {
	p := testPool(t, Config{}, knobs(t))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	if got := rc.settings[http2.SettingMaxConcurrentStreams]; got != 2147483647 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 2147483647", got)
	}
	if got := rc.settings[http2.SettingInitialWindowSize]; got != 268435456 {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want 268435456", got)
	}
	frames, err := rc.read(time.Second, func(f frameInfo) bool { return f.typ == http2.FrameWindowUpdate && f.stream == 0 })
	if err != nil || frames[len(frames)-1].increment != 268435456-65535 {
		t.Errorf("connection WINDOW_UPDATE: %v %+v, want %d", err, frames, 268435456-65535)
	}
	cfg := pod.cfg.Load()
	if cfg.StreamIdleTimeout != 0 || cfg.IdleTimeout != time.Hour || cfg.DrainTimeout != 5*time.Second || cfg.BufferLimit != 1<<20 {
		t.Errorf("defaults: stream idle %s (Istio: off), idle %s (1h), drain %s (5s), buffer %d (1 MiB)",
			cfg.StreamIdleTimeout, cfg.IdleTimeout, cfg.DrainTimeout, cfg.BufferLimit)
	}
	if p.Config().Codec != CodecOghttp2 || p.Config().ListenerDrainTime != 45*time.Second {
		t.Errorf("pool defaults: codec %s (Envoy 1.35: oghttp2), listener drain %s (Istio: 45s)", p.Config().Codec, p.Config().ListenerDrainTime)
	}
}
