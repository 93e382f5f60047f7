package emulator

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The tests behind the abuse rows of docs/envoy-conformance.md: clients that flood, reset or
// send what Envoy refuses, on a real loopback connection, checked frame by frame and against
// the counters Envoy bumps.

// burst writes the frames build makes in one write(2), so that the gateway reads them in one
// dispatch, as a flooding client's frames arrive. Header blocks use the client's HPACK encoder.
func (rc *rawClient) burst(build func(fr *http2.Framer)) {
	rc.t.Helper()
	var b bytes.Buffer
	build(http2.NewFramer(&b, nil))
	if _, err := rc.c.Write(b.Bytes()); err != nil {
		rc.t.Fatal(err)
	}
}

// block encodes a request's header block.
func (rc *rawClient) block(method, path string, extra ...hpack.HeaderField) []byte {
	rc.hbuf.Reset()
	for _, f := range append([]hpack.HeaderField{{Name: ":method", Value: method}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "lab.local"}, {Name: ":path", Value: path}}, extra...) {
		_ = rc.enc.WriteField(f)
	}
	return append([]byte(nil), rc.hbuf.Bytes()...)
}

// closedWithout reads until the connection ends and fails if it does not within timeout or if
// any frame of the given types arrives.
func (rc *rawClient) closedWithout(timeout time.Duration, types ...http2.FrameType) []frameInfo {
	rc.t.Helper()
	frames, err := rc.read(timeout, nil)
	if err == nil || isTimeout(err) {
		rc.t.Fatalf("connection still open after %s: %v (%d frames)", timeout, err, len(frames))
	}
	for _, f := range frames {
		for _, typ := range types {
			if f.typ == typ {
				rc.t.Fatalf("the gateway sent %+v", f)
			}
		}
	}
	return frames
}

func checkStats(t *testing.T, pod *Pod, want map[string]int64) {
	t.Helper()
	for stat, n := range want {
		if got := waitStat(t, pod, stat, n); got != n {
			t.Errorf("%s = %d, want %d", stat, got, n)
		}
	}
}

// Empty DATA frames in a row past max_consecutive_inbound_frames_with_empty_payload (1): a flood
// (ProtocolConstraints::trackInboundFrames), which fails the dispatch; the connection manager
// closes after flushing, with no GOAWAY and no protocol error counted
// (ConnectionManagerImpl::onData, isInboundFramesWithEmptyPayloadError).
func TestEmptyDataFramesFlood(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, knobs(t)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			rc.burst(func(fr *http2.Framer) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block("POST", "/post"), EndHeaders: true})
				for range 3 {
					_ = fr.WriteData(1, false, nil)
				}
			})
			rc.closedWithout(3*time.Second, http2.FrameGoAway, http2.FrameRSTStream)
			checkStats(t, pod, map[string]int64{
				"http2.inbound_empty_frames_flood":           1,
				hcmName(pod, "downstream_cx_protocol_error"): 0,
				hcmName(pod, "downstream_rq_rx_reset"):       1, // the open stream, reset as the connection closes
				hcmName(pod, "downstream_cx_destroy_local"):  1,
				hcmName(pod, "downstream_cx_active"):         0,
				// FlushWriteAndDelay: the client waits for the close, so the timer closes it.
				hcmName(pod, "downstream_cx_delayed_close_timeout"): 1,
			})
		})
	}
}

// One empty frame is allowed, and a frame with payload (or END_STREAM) starts the count again.
func TestEmptyFramesBelowTheLimitAreServed(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t)).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.burst(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block("POST", "/post"), EndHeaders: true})
		_ = fr.WriteData(1, false, nil)
		_ = fr.WriteData(1, false, []byte("x"))
		_ = fr.WriteData(1, false, nil)
		_ = fr.WriteData(1, true, nil)
	})
	if _, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.end }); err != nil {
		t.Fatalf("the request did not complete: %v", err)
	}
	checkStats(t, pod, map[string]int64{"http2.inbound_empty_frames_flood": 0, hcmName(pod, "downstream_rq_2xx"): 1})
}

// PRIORITY frames past max_inbound_priority_frames_per_stream x (1 + streams opened), and
// WINDOW_UPDATE frames past 5 + 2 x (streams opened + 10 x DATA frames sent): floods, closed as
// the empty-frames flood is (ProtocolConstraints::checkInboundFrameLimits). nghttp2 1.65+ drops
// PRIORITY frames before any callback (no RFC 7540 priorities), so Envoy never counts them.
func TestPriorityAndWindowUpdateFloods(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		frames     int
		write      func(fr *http2.Framer, i int)
		nghttp2    bool // nghttp2 floods too
	}{
		{"priority", "http2.inbound_priority_frames_flood", 101, func(fr *http2.Framer, i int) {
			_ = fr.WritePriority(uint32(2*i+1), http2.PriorityParam{Weight: 15})
		}, false},
		{"window update", "http2.inbound_window_update_frames_flood", 6, func(fr *http2.Framer, _ int) {
			_ = fr.WriteWindowUpdate(0, 1)
		}, true},
	} {
		for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
			t.Run(tc.name+"/"+codec, func(t *testing.T) {
				pod := testPool(t, Config{Codec: codec}, knobs(t)).Pods()[0]
				rc := dialRaw(t, pod.Addr(), true)
				below := dialRaw(t, pod.Addr(), true)
				rc.burst(func(fr *http2.Framer) {
					for i := range tc.frames {
						tc.write(fr, i)
					}
				})
				below.burst(func(fr *http2.Framer) {
					for i := range tc.frames - 1 {
						tc.write(fr, i)
					}
					_ = fr.WritePing(false, [8]byte{7})
				})
				if codec == CodecNghttp2 && !tc.nghttp2 {
					_ = rc.fr.WritePing(false, [8]byte{7})
					if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
						t.Fatalf("nghttp2 drops these frames, but the connection ended: %v", err)
					}
					checkStats(t, pod, map[string]int64{tc.stat: 0, hcmName(pod, "downstream_cx_active"): 2})
					return
				}
				rc.closedWithout(3*time.Second, http2.FrameGoAway)
				if _, err := below.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
					t.Fatalf("a client at the limit lost its connection: %v", err)
				}
				checkStats(t, pod, map[string]int64{tc.stat: 1, hcmName(pod, "downstream_cx_protocol_error"): 0,
					hcmName(pod, "downstream_cx_active"): 1})
			})
		}
	}
}

// A client that opens streams and resets them at once: once half of
// overload.premature_reset_total_stream_count (500) have ended within a second of their start
// without a response, the connection manager aborts the connection (no GOAWAY, nothing flushed)
// and counts downstream_rq_too_many_premature_resets (ConnectionManagerImpl::
// maybeDrainDueToPrematureResets). nghttp2's own reset limit (1000) is not reached first.
func TestPrematureResetsAbortTheConnection(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, knobs(t)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			const pairs = 400
			rc.burst(func(fr *http2.Framer) {
				for i := range pairs {
					id := uint32(2*i + 1)
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block("GET", "/delay/1"), EndStream: true, EndHeaders: true})
					_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
				}
			})
			rc.closedWithout(3*time.Second, http2.FrameGoAway)
			checkStats(t, pod, map[string]int64{
				hcmName(pod, "downstream_rq_too_many_premature_resets"): 1,
				hcmName(pod, "downstream_cx_protocol_error"):            0,
				hcmName(pod, "downstream_cx_destroy_local"):             1,
			})
			if n := statValue(t, pod, "http2.rx_reset"); n < prematureTotalStreamCount/2 || n > pairs {
				t.Errorf("http2.rx_reset = %d, want %d..%d", n, prematureTotalStreamCount/2, pairs)
			}
		})
	}
}

// Streams that got their response before the client reset them are not premature: the
// connection lives on (isPrematureRstStream needs a stream with no response).
func TestResetsAfterTheResponseAreNotPremature(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t)).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	for i := range 300 {
		id := uint32(2*i + 1)
		rc.headers(id, "GET", "/get", true)
		if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.stream == id && f.end }); err != nil {
			t.Fatalf("stream %d: %v", id, err)
		}
		_ = rc.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	_ = rc.fr.WritePing(false, [8]byte{1})
	if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
		t.Fatalf("connection lost: %v", err)
	}
	checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_rq_too_many_premature_resets"): 0})
}

// nghttp2 drains a token for every RST_STREAM it gets, on a live stream or a closed one, from a
// burst of 1000 refilled at 33 a second; with none left it answers GOAWAY INTERNAL_ERROR
// (nghttp2_session.c nghttp2_session_on_rst_stream_received, session_update_stream_reset_
// ratelim), whose sending fails Envoy's onFrameSend. oghttp2 has no such limit.
func TestNghttp2ResetRateLimit(t *testing.T) {
	for _, tc := range []struct {
		codec  string
		goAway bool
	}{{CodecNghttp2, true}, {CodecOghttp2, false}} {
		t.Run(tc.codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: tc.codec}, knobs(t)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			rc.headers(1, "GET", "/get", true)
			if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.end }); err != nil {
				t.Fatal(err)
			}
			rc.burst(func(fr *http2.Framer) {
				for range nghttp2ResetBurst + 1 {
					_ = fr.WriteRSTStream(1, http2.ErrCodeCancel) // stream 1 is closed: no premature reset
				}
				_ = fr.WritePing(false, [8]byte{2})
			})
			frames, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing || f.typ == http2.FrameGoAway })
			if !tc.goAway {
				if err != nil {
					t.Fatalf("oghttp2 has no reset rate limit, but: %v (%+v)", err, frames)
				}
				return
			}
			if err != nil {
				t.Fatalf("no GOAWAY: %v (%+v)", err, frames)
			}
			if g := frames[len(frames)-1]; g.typ != http2.FrameGoAway || g.code != http2.ErrCodeInternal || g.lastStream != 1 {
				t.Fatalf("got %+v, want GOAWAY(1, INTERNAL_ERROR)", g)
			}
			rc.closedWithout(3 * time.Second)
			checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_cx_protocol_error"): 1})
		})
	}
}

// An invalid request header (here an upper-case name) is a messaging error. Envoy's default
// (stream_error_on_invalid_http_message false) fails the codec's callback, so the connection
// closes with nothing sent; with the knob on, only the stream is reset
// (codec_impl.cc ConnectionImpl::onInvalidFrame, Http2Visitor::OnInvalidFrame).
func TestInvalidRequestHeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		k        []string
		codec    string
		closes   bool
		protoErr int64
	}{
		{"default/oghttp2", nil, CodecOghttp2, true, 1},
		{"default/nghttp2", nil, CodecNghttp2, true, 1},
		{"stream error/oghttp2", []string{"hcm.http2_protocol_options.override_stream_error_on_invalid_http_message", "true"}, CodecOghttp2, false, 0},
		{"stream error/nghttp2", []string{"hcm.stream_error_on_invalid_http_message", "true"}, CodecNghttp2, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPool(t, Config{Codec: tc.codec}, knobs(t, tc.k...)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			rc.headers(1, "GET", "/get", true, hpack.HeaderField{Name: "X-Upper", Value: "1"})
			if tc.closes {
				rc.closedWithout(3*time.Second, http2.FrameGoAway, http2.FrameRSTStream, http2.FrameHeaders)
			} else {
				rc.resetThenServes(http2.ErrCodeProtocol)
			}
			checkStats(t, pod, map[string]int64{"http2.rx_messaging_error": 1,
				hcmName(pod, "downstream_cx_protocol_error"): tc.protoErr})
		})
	}
}

// Request headers past max_request_headers_kb (60) or max_headers_count (100): Envoy's
// saveHeader refuses the header, counts http2.header_overflow, and the codec resets the stream
// with INTERNAL_ERROR (HEADER_RST_STREAM); the connection lives on.
func TestRequestHeadersOverflow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []hpack.HeaderField
	}{
		{"size", []hpack.HeaderField{{Name: "x-big1", Value: strings.Repeat("a", 16000)}, {Name: "x-big2", Value: strings.Repeat("b", 16000)},
			{Name: "x-big3", Value: strings.Repeat("c", 16000)}, {Name: "x-big4", Value: strings.Repeat("d", 16000)}}},
		{"count", func() (h []hpack.HeaderField) {
			for i := range 101 {
				h = append(h, hpack.HeaderField{Name: "x-h" + strings.Repeat("i", i%7), Value: "v"})
			}
			return h
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPool(t, Config{}, knobs(t)).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			blk := rc.block("GET", "/get", tc.extra...)
			rc.burst(func(fr *http2.Framer) {
				// Header blocks past the frame size go as HEADERS plus CONTINUATION.
				const max = 16384
				first := blk[:min(max, len(blk))]
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndStream: true, EndHeaders: len(blk) <= max})
				for rest := blk[len(first):]; len(rest) > 0; {
					n := min(max, len(rest))
					_ = fr.WriteContinuation(1, n == len(rest), rest[:n])
					rest = rest[n:]
				}
			})
			rc.resetThenServes(http2.ErrCodeInternal)
			checkStats(t, pod, map[string]int64{"http2.header_overflow": 1, hcmName(pod, "downstream_cx_protocol_error"): 0})
		})
	}
}

// resetThenServes expects stream 1 reset with code, and the connection to serve stream 3 after.
func (rc *rawClient) resetThenServes(code http2.ErrCode) {
	rc.t.Helper()
	frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameRSTStream })
	if err != nil || frames[len(frames)-1].code != code {
		rc.t.Fatalf("want RST_STREAM(1, %v): %v %+v", code, err, frames)
	}
	rc.headers(3, "GET", "/get", true)
	if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.stream == 3 && f.end }); err != nil {
		rc.t.Fatalf("the connection did not outlive the reset: %v", err)
	}
}
