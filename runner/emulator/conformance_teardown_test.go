package emulator

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The tests behind the outbound-flood, teardown and memory rows of docs/envoy-conformance.md.

// PINGs whose acknowledgements pile up past max_outbound_control_frames (1000) in one dispatch:
// Envoy checks its outbound limits as sendPendingFrames ends the dispatch
// (ProtocolConstraints::checkOutboundFrameLimits), counts http2.outbound_control_flood, and the
// connection manager closes after flushing, with no GOAWAY and no protocol error counted.
func TestOutboundControlFlood(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, knobs(t)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			below := dialRaw(t, pod.Addr(), true)
			rc.burst(func(fr *http2.Framer) {
				for i := range 3000 {
					_ = fr.WritePing(false, [8]byte{byte(i)})
				}
			})
			below.burst(func(fr *http2.Framer) {
				for i := range 900 {
					_ = fr.WritePing(false, [8]byte{byte(i)})
				}
			})
			rc.closedWithout(3*time.Second, http2.FrameGoAway)
			acks := 0
			if _, err := below.read(2*time.Second, func(f frameInfo) bool {
				acks++
				return acks == 900
			}); err != nil {
				t.Fatalf("900 PINGs cost the client its connection: %v", err)
			}
			checkStats(t, pod, map[string]int64{"http2.outbound_control_flood": 1, "http2.outbound_flood": 0,
				hcmName(pod, "downstream_cx_protocol_error"): 0, hcmName(pod, "downstream_cx_active"): 1,
				hcmName(pod, "downstream_cx_delayed_close_timeout"): 1})
		})
	}
}

// A client that stops reading while responses stream to it: the frames Envoy has written into
// the connection's buffer and the socket has not taken pass max_outbound_frames (here moved to
// 100 by the knob), and Envoy closes the connection without flushing (ConnectionImpl::
// onProtocolConstraintViolation), counting http2.outbound_flood.
//
// What the kernel takes is not the test's to choose: the gateway's send buffer autotunes up to
// tcp_wmem's maximum (4 MiB by default) whatever the client does. So the responses (200 x 64 KiB)
// outweigh it by far, and the connection's buffer limit (where the router stops reading the
// upstream, writeData) is raised past them: what the socket cannot take stays in the buffer,
// hundreds of frames, on any machine and at any scheduling. At the default 1 MiB limit the
// buffer would hold some 64 DATA frames and the count would pass 100 only when the HEADERS
// happened to pile up before the first write.
func TestOutboundFloodWhenTheClientStopsReading(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t, "hcm.http2_protocol_options.max_outbound_frames", "100",
		"listener.per_connection_buffer_limit_bytes", "67108864")).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	_ = rc.c.(*net.TCPConn).SetReadBuffer(4096) // a client that stopped reading: its socket fills at once
	rc.burst(func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
		for i := range 200 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: rc.block("GET", "/bytes/65536"),
				EndStream: true, EndHeaders: true})
		}
	})
	if n := waitStat(t, pod, "http2.outbound_flood", 1); n != 1 {
		t.Fatalf("http2.outbound_flood = %d, want 1", n)
	}
	checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_cx_active"): 0,
		hcmName(pod, "downstream_cx_protocol_error"): 0, hcmName(pod, "downstream_cx_destroy_local"): 1})
}

// A client that closes its connection with streams queued behind a busy worker: the connection
// manager resets every stream at once (ConnectionManagerImpl::onEvent -> resetAllStreams), so
// the worker never spends time on the work it had not started, and each reset stream is
// counted (downstream_rq_rx_reset, downstream_cx_destroy_remote_active_rq).
func TestClosedConnectionCostsNothingMore(t *testing.T) {
	p := testPool(t, Config{Model: Model{ServiceTime: 20 * time.Millisecond}}, knobs(t))
	pod := p.Pods()[0]
	w := pod.Workers()[0]
	rc := dialRaw(t, pod.Addr(), true)
	const streams = 200 // four seconds of work
	rc.burst(func(fr *http2.Framer) {
		for i := range streams {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: rc.block("GET", "/get"),
				EndStream: true, EndHeaders: true})
		}
	})
	time.Sleep(200 * time.Millisecond)
	if w.Backlog() < time.Second {
		t.Fatalf("backlog %s: the streams did not queue", w.Backlog())
	}
	rc.c.Close()
	time.Sleep(time.Second)
	if b := w.Backlog(); b > 0 {
		t.Fatalf("one second after the client closed, the worker still has %s of its work", b)
	}
	busy := w.Busy()
	time.Sleep(200 * time.Millisecond)
	if w.Busy() != busy {
		t.Fatalf("the worker kept working for a closed connection")
	}
	done := statValue(t, pod, hcmName(pod, "downstream_rq_2xx"))
	checkStats(t, pod, map[string]int64{
		hcmName(pod, "downstream_rq_rx_reset"):                 streams - done,
		hcmName(pod, "downstream_cx_destroy_remote_active_rq"): 1,
		hcmName(pod, "downstream_rq_active"):                   0,
		hcmName(pod, "downstream_cx_active"):                   0,
	})
	if done > streams/4 {
		t.Errorf("%d of %d streams completed in the 200 ms before the close", done, streams)
	}
}

// Dropping a connection's work moves the work queued behind it earlier and leaves work under way
// alone.
func TestWorkerDrop(t *testing.T) {
	w := newWorker(0, NewClock(), nil, NewStore(), "lis", false)
	a, b := &serverConn{}, &serverConn{}
	first := w.Book(a, 300*time.Millisecond) // under way at once
	w.Book(a, time.Second)
	later := w.Book(b, 100*time.Millisecond)
	if got := later.it.Start.Sub(first.it.Start); got < 1300*time.Millisecond-time.Millisecond {
		t.Fatalf("b's work starts %s after a's, want 1.3s", got)
	}
	if freed := w.Drop(a); freed != time.Second {
		t.Fatalf("dropped %s, want 1s", freed)
	}
	if got := later.it.Start.Sub(first.it.Start); got > 300*time.Millisecond+5*time.Millisecond {
		t.Fatalf("after the drop b's work starts %s after a's, want 300ms", got)
	}
	if err := later.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b := w.Backlog(); b != 0 {
		t.Fatalf("backlog %s after the last booking is done", b)
	}
}

// The kubelet's restart back-off: at once the first time, then 10 s doubling to 5 min, and at
// once again after ten minutes without a crash.
func TestCrashBackOff(t *testing.T) {
	var b crashBackOff
	t0 := time.Unix(1_000_000, 0)
	for i, tc := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 0}, {time.Second, 10 * time.Second}, {20 * time.Second, 20 * time.Second}, {50 * time.Second, 40 * time.Second},
		{100 * time.Second, 80 * time.Second}, {200 * time.Second, 160 * time.Second}, {400 * time.Second, 300 * time.Second},
		{700 * time.Second, 300 * time.Second}, {1400 * time.Second, 0}, {1401 * time.Second, 10 * time.Second},
	} {
		if got := b.Delay(t0.Add(tc.at)); got != tc.want {
			t.Errorf("crash %d at %s: back-off %s, want %s", i+1, tc.at, got, tc.want)
		}
	}
}

// A pod whose held memory passes its limit is OOM-killed and restarted: its connections end,
// the event says why, and the restarted pod serves again.
func TestPodPastItsMemoryLimitIsOOMKilled(t *testing.T) {
	p := testPool(t, Config{MemoryLimit: 16 << 20}, knobs(t))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	// Streams held open (their bodies never end) until the pod holds more than 16 MiB.
	rc.burst(func(fr *http2.Framer) {
		for i := range 2000 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: rc.block("POST", "/post"),
				EndHeaders: true})
		}
	})
	rc.closedWithout(5 * time.Second)
	var ev *Event
	deadline := time.Now().Add(3 * time.Second)
	for ev == nil && time.Now().Before(deadline) {
		for _, e := range p.Events() {
			if e.Kind == "oom-killed" {
				ev = &e
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ev == nil {
		t.Fatalf("no oom-killed event: %+v", p.Events())
	}
	if !strings.Contains(ev.Detail, "OOMKilled") || !strings.Contains(ev.Detail, "16 MiB limit") {
		t.Errorf("event %q does not say what happened", ev.Detail)
	}
	deadline = time.Now().Add(3 * time.Second)
	for !p.Pods()[0].Up() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	again := dialRaw(t, p.Pods()[0].Addr(), true)
	again.headers(1, "GET", "/get", true)
	if _, err := again.read(2*time.Second, func(f frameInfo) bool { return f.end }); err != nil {
		t.Fatalf("the restarted pod does not serve: %v", err)
	}
}

// A client whose first write already holds the requests that reach max_requests_per_connection:
// the drain's GOAWAY goes out behind the server's SETTINGS, which Envoy queued first (a Go
// client rejects a GOAWAY before SETTINGS as a protocol error).
func TestDrainInTheFirstDispatchFollowsTheSettings(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, knobs(t, "hcm.common_http_protocol_options.max_requests_per_connection", "2")).Pods()[0]
			c, err := net.Dial("tcp", pod.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rc := &rawClient{t: t, c: c, settings: map[http2.SettingID]uint32{}}
			rc.fr = http2.NewFramer(c, c)
			rc.enc = hpack.NewEncoder(&rc.hbuf)
			rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
			var b bytes.Buffer
			b.WriteString(clientPreface)
			fr := http2.NewFramer(&b, nil)
			_ = fr.WriteSettings()
			for i := range 3 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: rc.block("GET", "/get"), EndStream: true, EndHeaders: true})
			}
			if _, err := c.Write(b.Bytes()); err != nil {
				t.Fatal(err)
			}
			frames, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway })
			if err != nil {
				t.Fatalf("no GOAWAY: %v (%+v)", err, frames)
			}
			if frames[0].typ != http2.FrameSettings {
				t.Fatalf("first frame %+v, want the server's SETTINGS", frames[0])
			}
		})
	}
}

// A stream whose response waits behind a zero window holds its request headers, its response
// headers (the connection manager keeps them for the access log) and its body slice until it
// ends; its reset gives all of it back.
func TestAnsweredStreamHoldsItsResponseHeaders(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t)).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	if err := rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	const idle = connMemory // the connection, its buffers empty once the SETTINGS are dispatched
	deadline := time.Now().Add(2 * time.Second)
	for pod.mem.Used() != idle && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rc.headers(1, "GET", "/get", true)
	if _, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameHeaders }); err != nil {
		t.Fatalf("no response headers: %v", err)
	}
	requestHeaders := int64(len(":methodGET:schemehttp:authoritylab.local:path/get") + 4*headerOverhead)
	// The body reaches the stream's buffer just after the headers are encoded.
	var held int64
	for deadline = time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if held = pod.mem.Used() - idle; held >= DefaultStreamMemory+sliceSize {
			break
		}
	}
	if min := int64(DefaultStreamMemory) + sliceSize + requestHeaders + 3*headerOverhead; held < min {
		t.Errorf("an answered stream behind a zero window holds %d bytes, want at least %d (stream, body slice, request and response headers)", held, min)
	}
	if err := rc.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	for deadline = time.Now().Add(2 * time.Second); pod.mem.Used() != idle && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := pod.mem.Used(); got != idle {
		t.Errorf("after the reset the pod holds %d bytes, want the idle connection's %d", got, idle)
	}
}

// A connection that closes while the worker dispatches its last read (the writer saw the client
// go: EPIPE) makes no stream from the rest of that read. In Envoy the close and the dispatch
// share a thread, so no stream is made after resetAllStreams; here a stream made after it would
// stay active, hold its memory and keep the worker's booking for good.
func TestCloseDuringDispatchMakesNoStream(t *testing.T) {
	p := testPool(t, Config{Model: Model{ServiceTime: 20 * time.Millisecond}}, knobs(t))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	var sc *serverConn
	for deadline := time.Now().Add(2 * time.Second); sc == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pod.mu.Lock()
		for c := range pod.conns {
			sc = c
		}
		pod.mu.Unlock()
	}
	if sc == nil {
		t.Fatal("the gateway has no connection")
	}
	// The read the worker is dispatching: 100 requests, their blocks encoded as the client's
	// first (the server's HPACK table is still empty).
	var read bytes.Buffer
	fr := http2.NewFramer(&read, nil)
	for i := range 100 {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: rc.block("GET", "/get"),
			EndStream: true, EndHeaders: true})
	}
	sc.close("write: broken pipe")
	sc.dispatch(read.Bytes())
	checkStats(t, pod, map[string]int64{
		hcmName(pod, "downstream_rq_total"):  0,
		hcmName(pod, "downstream_rq_active"): 0,
		hcmName(pod, "downstream_cx_active"): 0,
	})
	if b := pod.Workers()[0].Backlog(); b != 0 {
		t.Errorf("the worker has %s booked for a closed connection", b)
	}
	if got := pod.mem.Used(); got != 0 {
		t.Errorf("the pod holds %d bytes with no connection", got)
	}
}
