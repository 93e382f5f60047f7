package emulator

import (
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// Drains, GOAWAYs and who closed a connection, as Envoy's connection manager
// (startDrainSequence, onDrainTimeout, checkForDeferredClose, onEvent) does them.

// A drain while streams are in flight: the shutdown notice leaves them (and new ones) alone,
// the final GOAWAY names the last stream, the streams in flight still complete, and the
// connection closes when the last one ends. After the final GOAWAY oghttp2 (Envoy 1.35's
// default) still serves a new stream; nghttp2 ignores it without a reply.
func TestGoAwayWhileStreamsInFlight(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			p := testPool(t, Config{Codec: codec}, knobs(t,
				"hcm.common_http_protocol_options.max_requests_per_connection", "2",
				"hcm.drain_timeout", "0.2s"))
			pod := p.Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			rc.headers(1, "GET", "/delay/1", true)
			rc.headers(3, "GET", "/delay/1", true) // the second request reaches the limit
			frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway })
			if err != nil || frames[len(frames)-1].lastStream != 1<<31-1 {
				t.Fatalf("no shutdown notice: %v %+v", err, frames)
			}
			rc.headers(5, "GET", "/get", true) // after the notice: still accepted
			frames, err = rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway })
			if err != nil {
				t.Fatalf("no final GOAWAY: %v %+v", err, frames)
			}
			if ga := frames[len(frames)-1]; ga.lastStream != 5 || ga.code != http2.ErrCodeNo {
				t.Fatalf("final GOAWAY %+v, want last stream 5, NO_ERROR", ga)
			}
			rc.headers(7, "GET", "/get", true) // after the final GOAWAY
			frames, err = rc.read(5*time.Second, nil)
			if err == nil || isTimeout(err) {
				t.Fatalf("connection not closed once its streams ended: %v", err)
			}
			ended := map[uint32]bool{}
			for _, f := range frames {
				if f.end || f.typ == http2.FrameRSTStream {
					ended[f.stream] = f.typ != http2.FrameRSTStream
				}
			}
			if !ended[1] || !ended[3] {
				t.Fatalf("streams in flight did not complete across the drain: %v", ended)
			}
			served7, want7 := ended[7], codec == CodecOghttp2
			if served7 != want7 {
				t.Fatalf("%s: stream 7 after the final GOAWAY served=%v, want %v", codec, served7, want7)
			}
			if n := waitStat(t, pod, "http2.goaway_sent", 1); n != 1 {
				t.Fatalf("http2.goaway_sent = %d, want 1 (the final GOAWAY only)", n)
			}
		})
	}
}

// The side that closes is counted: a client that hangs up is downstream_cx_destroy_remote;
// when the gateway closes, it is destroy_local. A client that closes while Envoy waits in its
// delayed close (after the final GOAWAY) is the remote side too.
func TestConnectionCloseSide(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.common_http_protocol_options.max_requests_per_connection", "1",
		"hcm.drain_timeout", "0.05s"))
	pod := p.Pods()[0]

	quit := dialRaw(t, pod.Addr(), true)
	quit.c.Close() // the client hangs up, nothing in flight
	if n := waitStat(t, pod, hcmName(pod, "downstream_cx_destroy_remote"), 1); n != 1 {
		t.Fatalf("client close: destroy_remote = %d, want 1", n)
	}

	polite := dialRaw(t, pod.Addr(), true)
	polite.headers(1, "GET", "/get", true) // reaches the limit: drain, final GOAWAY, delayed close
	if _, err := polite.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway && f.lastStream == 1 }); err != nil {
		t.Fatalf("no final GOAWAY: %v", err)
	}
	polite.c.Close() // within delayed_close_timeout: counted as the client's close
	if n := waitStat(t, pod, hcmName(pod, "downstream_cx_destroy_remote"), 2); n != 2 {
		t.Fatalf("close during the delayed close: destroy_remote = %d, want 2", n)
	}

	stubborn := dialRaw(t, pod.Addr(), true)
	stubborn.headers(1, "GET", "/get", true)
	if _, err := stubborn.read(3*time.Second, nil); err == nil || isTimeout(err) {
		t.Fatalf("gateway did not close after its delayed close: %v", err)
	}
	for stat, want := range map[string]int64{
		hcmName(pod, "downstream_cx_destroy_local"):         1,
		hcmName(pod, "downstream_cx_delayed_close_timeout"): 1,
		hcmName(pod, "downstream_cx_destroy_remote"):        2,
		hcmName(pod, "downstream_cx_destroy"):               3,
	} {
		if n := waitStat(t, pod, stat, want); n != want {
			t.Errorf("%s = %d, want %d", stat, n, want)
		}
	}
}

// A listener update under Istio (--drain-strategy immediate, --drain-time-s): a change to the
// connection manager updates the filter chain in place and drains the old chain's connections
// (total_filter_chains_draining); they learn of it at their next response, which goes out
// behind a GOAWAY shutdown notice and counts in downstream_cx_drain_close
// (ActiveStream::encodeHeaders); an idle connection hears nothing and is closed when the drain
// time ends.
func TestListenerUpdateDrainsImmediatelyAtTheNextResponse(t *testing.T) {
	p := testPool(t, Config{ListenerDrainTime: 600 * time.Millisecond}, knobs(t, "hcm.drain_timeout", "5s"))
	pod := p.Pods()[0]
	// The pool's first setup changed the listener it started with: let that drain end first.
	if n := waitStat(t, pod, "listener_manager.total_filter_chains_draining", 0); n != 0 {
		t.Fatalf("total_filter_chains_draining = %d long after the first setup", n)
	}
	idle := dialRaw(t, pod.Addr(), true)
	busy := dialRaw(t, pod.Addr(), true)
	time.Sleep(50 * time.Millisecond)
	before := statValue(t, pod, "listener_manager.listener_modified")
	inPlace := statValue(t, pod, "listener_manager.listener_in_place_updated")
	applied := time.Now()
	p.Apply(Setup{Knobs: knobs(t, "hcm.drain_timeout", "5s", "hcm.http2_protocol_options.max_concurrent_streams", "10")})
	for stat, want := range map[string]int64{
		"listener_manager.total_filter_chains_draining": 1,
		"listener_manager.total_listeners_draining":     0,
		"listener_manager.listener_in_place_updated":    inPlace + 1,
	} {
		if n := statValue(t, pod, stat); n != want {
			t.Fatalf("%s = %d during the drain, want %d", stat, n, want)
		}
	}
	busy.headers(1, "GET", "/get", true)
	frames, err := busy.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameHeaders })
	if err != nil {
		t.Fatalf("no response on the draining connection: %v", err)
	}
	if len(frames) < 2 || frames[len(frames)-2].typ != http2.FrameGoAway || frames[len(frames)-2].lastStream != 1<<31-1 {
		t.Fatalf("frames %+v: want the shutdown notice just before the response headers", frames)
	}
	if n := statValue(t, pod, hcmName(pod, "downstream_cx_drain_close")); n != 1 {
		t.Fatalf("downstream_cx_drain_close = %d, want 1", n)
	}
	frames, err = idle.read(3*time.Second, nil)
	if err == nil || isTimeout(err) {
		t.Fatalf("idle connection not closed at the end of the drain: %v", err)
	}
	for _, f := range frames {
		if f.typ == http2.FrameGoAway {
			t.Fatalf("idle connection got a GOAWAY %+v: Envoy drains only at a response", f)
		}
	}
	if d := time.Since(applied); d < 500*time.Millisecond {
		t.Fatalf("idle connection closed %s after the update, before the drain time (600ms)", d)
	}
	if n := waitStat(t, pod, "listener_manager.total_filter_chains_draining", 0); n != 0 {
		t.Fatalf("total_filter_chains_draining = %d after the drain", n)
	}
	if n := statValue(t, pod, "listener_manager.listener_modified"); n != before+1 {
		t.Fatalf("listener_modified = %d", n)
	}
	// A new connection gets the new settings.
	if got := dialRaw(t, pod.Addr(), true).settings[http2.SettingMaxConcurrentStreams]; got != 10 {
		t.Fatalf("new connection advertises %d streams, want 10", got)
	}
}

// A change to the listener itself (here its buffer limit) cannot be made in place: Envoy
// replaces the listener and drains the old one (total_listeners_draining).
func TestListenerLevelChangeReplacesTheListener(t *testing.T) {
	p := testPool(t, Config{ListenerDrainTime: 300 * time.Millisecond}, knobs(t))
	pod := p.Pods()[0]
	if n := waitStat(t, pod, "listener_manager.total_filter_chains_draining", 0); n != 0 {
		t.Fatalf("total_filter_chains_draining = %d long after the first setup", n)
	}
	p.Apply(Setup{Knobs: knobs(t, "listener.per_connection_buffer_limit_bytes", "65536")})
	if n := statValue(t, pod, "listener_manager.total_listeners_draining"); n != 1 {
		t.Fatalf("total_listeners_draining = %d after a listener-level change, want 1", n)
	}
	if n := waitStat(t, pod, "listener_manager.total_listeners_draining", 0); n != 0 {
		t.Fatalf("total_listeners_draining = %d after the drain time", n)
	}
}

// Everything of a connection runs on its worker's event loop: a worker busy with other work
// answers a PING only once it gets to it.
func TestBusyWorkerDelaysControlFrames(t *testing.T) {
	p := testPool(t, Config{}, knobs(t))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	_ = rc.fr.WritePing(false, [8]byte{1})
	frames, err := rc.read(time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing })
	if err != nil {
		t.Fatalf("idle worker: no PING ack: %v %+v", err, frames)
	}
	if err := p.StallWorker(0, 0, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	_ = rc.fr.WritePing(false, [8]byte{2})
	if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
		t.Fatalf("busy worker: no PING ack: %v", err)
	}
	if d := time.Since(sent); d < 250*time.Millisecond {
		t.Fatalf("PING acked %s after it was sent while the worker had 300ms of work queued", d)
	}
}
