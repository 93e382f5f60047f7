package emulator

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/h2dial"
)

// Each test here puts one knob on the emulated gateway and watches, on a real loopback
// connection, that the gateway behaves as Envoy does with it.

func TestMaxConcurrentStreamsMakesGoClientDial(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.http2_protocol_options.max_concurrent_streams", "4"))
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.Pods()[0].Addr() + "/delay/0.05",
		Mode: h2dial.Shared, Concurrency: 20, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Go dials when its connections are full; callers that arrive while a dial is in flight
	// share the new connection and may wait for a slot on it, so the count is between 2 and
	// ceil(20/4) = 5 plus the first.
	if res.ConnectionsOpened < 2 {
		t.Fatalf("a shared Go transport with 20 streams opened %d connection under a cap of 4", res.ConnectionsOpened)
	}
}

func TestInitialWindowSizes(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.http2_protocol_options.initial_stream_window_size", "70000",
		"hcm.http2_protocol_options.initial_connection_window_size", "1048576"))
	rc := dialRaw(t, p.Pods()[0].Addr(), true)
	if got := rc.settings[http2.SettingInitialWindowSize]; got != 70000 {
		t.Fatalf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want 70000", got)
	}
	frames, err := rc.read(time.Second, func(f frameInfo) bool { return f.typ == http2.FrameWindowUpdate && f.stream == 0 })
	if err != nil || frames[len(frames)-1].increment != 1048576-65535 {
		t.Fatalf("connection WINDOW_UPDATE: %v %+v, want increment %d", err, frames, 1048576-65535)
	}
}

func TestMaxRequestsPerConnectionDrainsInTwoSteps(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.common_http_protocol_options.max_requests_per_connection", "3",
		"hcm.drain_timeout", "0.3s"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	for _, id := range []uint32{1, 3, 5, 7, 9} {
		rc.headers(id, "GET", "/get", true)
	}
	frames, err := rc.read(5*time.Second, nil)
	if err == nil || isTimeout(err) {
		t.Fatalf("connection not closed: %v", err)
	}
	var goaways []frameInfo
	responses := 0
	for _, f := range frames {
		switch {
		case f.typ == http2.FrameGoAway:
			goaways = append(goaways, f)
		case f.typ == http2.FrameHeaders && f.status == "200":
			responses++
		}
	}
	if len(goaways) != 2 {
		t.Fatalf("GOAWAYs %+v, want a notice and a final one", goaways)
	}
	if goaways[0].lastStream != 1<<31-1 || goaways[0].code != http2.ErrCodeNo {
		t.Fatalf("first GOAWAY %+v, want the shutdown notice (last stream 2^31-1, NO_ERROR)", goaways[0])
	}
	if goaways[1].lastStream != 9 || goaways[1].code != http2.ErrCodeNo {
		t.Fatalf("final GOAWAY %+v, want last stream 9", goaways[1])
	}
	if gap := goaways[1].at.Sub(goaways[0].at); gap < 250*time.Millisecond {
		t.Fatalf("final GOAWAY %s after the notice, want drain_timeout (300ms)", gap)
	}
	if responses != 5 {
		t.Fatalf("%d responses, want 5: streams opened during the drain are still served", responses)
	}
	// Envoy counts every request at or over the limit (3, 4 and 5), not the connection once;
	// http2.goaway_sent counts the final GOAWAY only; downstream_cx_drain_close counts only
	// listener drains; and the client that never closed is closed by the gateway when its
	// delayed close times out.
	for stat, want := range map[string]int64{
		hcmName(pod, "downstream_cx_max_requests_reached"):  3,
		hcmName(pod, "downstream_cx_drain_close"):           0,
		"http2.goaway_sent":                                 1,
		hcmName(pod, "downstream_cx_delayed_close_timeout"): 1,
		hcmName(pod, "downstream_cx_destroy_local"):         1,
		hcmName(pod, "downstream_cx_destroy_remote"):        0,
	} {
		if n := waitStat(t, pod, stat, want); n != want {
			t.Errorf("%s = %d, want %d", stat, n, want)
		}
	}
}

func TestMaxConnectionDuration(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.common_http_protocol_options.max_connection_duration", "0.2s",
		"hcm.drain_timeout", "0.05s"))
	pod := p.Pods()[0]
	start := time.Now()
	rc := dialRaw(t, pod.Addr(), true)
	frames, err := rc.read(3*time.Second, nil)
	if err == nil || isTimeout(err) {
		t.Fatalf("connection not closed: %v", err)
	}
	var first *frameInfo
	for i := range frames {
		if frames[i].typ == http2.FrameGoAway {
			first = &frames[i]
			break
		}
	}
	if first == nil || first.lastStream != 1<<31-1 {
		t.Fatalf("frames %+v: want a GOAWAY shutdown notice", frames)
	}
	if d := first.at.Sub(start); d < 180*time.Millisecond {
		t.Fatalf("GOAWAY after %s, before max_connection_duration (200ms)", d)
	}
	if n := statValue(t, pod, hcmName(pod, "downstream_cx_max_duration_reached")); n != 1 {
		t.Fatalf("downstream_cx_max_duration_reached = %d, want 1", n)
	}
}

func TestIdleTimeout(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.common_http_protocol_options.idle_timeout", "0.2s",
		"hcm.drain_timeout", "0.05s"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.headers(1, "GET", "/get", true)
	if _, err := rc.read(time.Second, func(f frameInfo) bool { return f.end }); err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	frames, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway })
	if err != nil {
		t.Fatalf("no GOAWAY after idling: %v %+v", err, frames)
	}
	if d := time.Since(done); d < 150*time.Millisecond {
		t.Fatalf("GOAWAY after %s idle, before idle_timeout", d)
	}
	if n := statValue(t, pod, hcmName(pod, "downstream_cx_idle_timeout")); n != 1 {
		t.Fatalf("downstream_cx_idle_timeout = %d, want 1", n)
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.stream_idle_timeout", "0.2s"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.headers(1, "POST", "/anything", false) // a body is promised and never sent
	frames, err := rc.read(3*time.Second, func(f frameInfo) bool {
		return f.stream == 1 && (f.typ == http2.FrameHeaders || f.typ == http2.FrameRSTStream)
	})
	if err != nil {
		t.Fatalf("stream not timed out: %v", err)
	}
	if last := frames[len(frames)-1]; last.typ == http2.FrameHeaders && last.status != "408" {
		t.Fatalf("status %s, want 408", last.status)
	}
	if n := statValue(t, pod, hcmName(pod, "downstream_rq_idle_timeout")); n != 1 {
		t.Fatalf("downstream_rq_idle_timeout = %d, want 1", n)
	}
}

func TestPerConnectionBufferLimitPausesUpstreamReads(t *testing.T) {
	paused := func(limit string) int64 {
		p := testPool(t, Config{}, knobs(t, "listener.per_connection_buffer_limit_bytes", limit))
		pod := p.Pods()[0]
		rc := dialRaw(t, pod.Addr(), true)
		// Open wide windows so that only the connection's write buffer can hold the gateway back.
		_ = rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
		_ = rc.fr.WriteWindowUpdate(0, 1<<30)
		for i := uint32(0); i < 8; i++ {
			rc.headers(1+2*i, "GET", "/bytes/1048576", true)
		}
		time.Sleep(700 * time.Millisecond) // not reading: the socket and then the buffer fill
		ends := 0
		if _, err := rc.read(10*time.Second, func(f frameInfo) bool {
			if f.end {
				ends++
			}
			return ends == 8
		}); err != nil {
			t.Fatalf("limit %s: responses did not complete: %v", limit, err)
		}
		return statValue(t, pod, "cluster."+ClusterHTTPBin+";.upstream_flow_control_paused_reading_total")
	}
	small, big := paused("32768"), paused("268435456")
	if small == 0 {
		t.Fatalf("a 32 KiB buffer limit never paused upstream reads")
	}
	if big != 0 {
		t.Fatalf("a 256 MiB buffer limit paused upstream reads %d times for 8 MiB of responses", big)
	}
}

func TestReusePortSpreadsAcrossWorkerSockets(t *testing.T) {
	for _, reuse := range []string{"true", "false"} {
		p := testPool(t, Config{Workers: 4}, knobs(t, "listener.enable_reuse_port", reuse))
		pod := p.Pods()[0]
		for i := 0; i < 40; i++ {
			c, err := net.Dial("tcp", pod.Addr())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(c, clientPreface)
			defer c.Close()
		}
		time.Sleep(200 * time.Millisecond)
		busy := 0
		for _, w := range pod.Workers() {
			if w.CxTotal.Value() > 0 {
				busy++
			}
		}
		if busy < 2 {
			t.Fatalf("enable_reuse_port=%s: 40 connections landed on %d worker(s)", reuse, busy)
		}
		if got := pod.cfg.Load().ReusePort; (reuse == "true") != got {
			t.Fatalf("enable_reuse_port=%s not applied", reuse)
		}
	}
}

func TestRequestTrailersAndBodiesReachTheUpstream(t *testing.T) {
	p := testPool(t, Config{}, knobs(t))
	rc := dialRaw(t, p.Pods()[0].Addr(), true)
	rc.headers(1, "POST", "/anything", false, hpack.HeaderField{Name: "content-type", Value: "text/plain"})
	_ = rc.fr.WriteData(1, true, []byte("hello upstream"))
	frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.end })
	if err != nil {
		t.Fatal(err)
	}
	var status string
	var body int
	for _, f := range frames {
		if f.typ == http2.FrameHeaders && f.stream == 1 {
			status = f.status
		}
		body += f.dataLen
	}
	if status != "200" || body == 0 {
		t.Fatalf("status %q, %d body bytes", status, body)
	}
}

// TestMaxRequestsDrainWaitsForTheWorker: the drain starts when the worker takes up the
// request that reaches the limit (Envoy's newStream runs as the worker dispatches its
// HEADERS), not when its bytes arrive. Five requests sent at once to a worker that takes
// 40 ms each: the third is taken up 80 ms in, so the shutdown notice leaves no sooner, and the
// count moves only as each request at or over the limit is taken up.
func TestMaxRequestsDrainWaitsForTheWorker(t *testing.T) {
	const service = 40 * time.Millisecond
	p := testPool(t, Config{Model: Model{ServiceTime: service, PerKiB: time.Microsecond}}, knobs(t,
		"hcm.common_http_protocol_options.max_requests_per_connection", "3",
		"hcm.drain_timeout", "5s"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	sent := time.Now()
	for _, id := range []uint32{1, 3, 5, 7, 9} {
		rc.headers(id, "GET", "/get", true)
	}
	stat := hcmName(pod, "downstream_cx_max_requests_reached")
	time.Sleep(service / 2)
	// Only while the worker cannot have reached the third request: a starved machine may
	// oversleep past it, and then the count may rightly have moved.
	if n, at := statValue(t, pod, stat), time.Since(sent); n != 0 && at < 2*service {
		t.Errorf("%s = %d %s after the requests were sent, before the worker could take up the third: counted on arrival", stat, n, at)
	}
	var notice *frameInfo
	responses := 0
	_, err := rc.read(5*time.Second, func(f frameInfo) bool {
		switch {
		case f.typ == http2.FrameGoAway && notice == nil:
			notice = &f
		case f.typ == http2.FrameHeaders && f.status == "200":
			responses++
		}
		return responses == 5
	})
	if err != nil {
		t.Fatalf("read: %v (%d responses)", err, responses)
	}
	if notice == nil {
		t.Fatal("no shutdown notice")
	}
	if after := notice.at.Sub(sent); after < 2*service-5*time.Millisecond {
		t.Errorf("shutdown notice %s after the requests were sent; the worker takes up the third after two requests' work (%s)", after, 2*service)
	}
	if n := waitStat(t, pod, stat, 3); n != 3 {
		t.Errorf("%s = %d, want 3", stat, n)
	}
}
