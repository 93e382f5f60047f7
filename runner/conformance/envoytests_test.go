package conformance

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/net/http2"
)

// Envoy's integration tests a downstream client can replay, each translated from its source:
// the knobs its config sets, the frames it sends, what it reads back and the counters it checks.
// Where Envoy's test needs something a client cannot do (make Envoy's socket writes fail, script
// the upstream), the case does the client-side equivalent and says so.

const (
	flood    = "http2_flood_integration_test.cc"
	idle     = "idle_timeout_integration_test.cc"
	mux      = "multiplexed_integration_test.cc"
	protocol = "protocol_integration_test.cc"
	hcmUnit  = "../common/http/conn_manager_impl_test.cc"
)

// floodLimits are Http2FloodMitigationTest::beginSession's: setDownstreamOutboundFramesLimits
// (AllFrameFloodLimit 1000, ControlFrameFloodLimit 100).
var floodLimits = []string{"hcm.http2_protocol_options.max_outbound_frames=1000", "hcm.http2_protocol_options.max_outbound_control_frames=100"}

// connDuration is the ConnDuration tests' config: setDownstreamMaxConnectionDuration(500 ms),
// drain_timeout 1 s.
var connDuration = []string{"hcm.common_http_protocol_options.max_connection_duration=0.5s", "hcm.drain_timeout=1s"}

func with(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

// burst writes frames in one write(2), so that the gateway takes them in one read, as the
// test's serialized frames arrive (floodServer writes them in one buffer).
func (w *wire) burst(build func(fr *http2.Framer)) {
	w.t.Helper()
	var b bytes.Buffer
	build(http2.NewFramer(&b, nil))
	if _, err := w.c.Write(b.Bytes()); err != nil {
		w.t.Fatal(err)
	}
}

// floodServer is the test's helper: frames in one write, the connection closed by the
// gateway, the flood's counter and the delayed close counted.
func (r *replay) floodServer(w *wire, stat string, build func(fr *http2.Framer)) {
	r.t.Helper()
	w.burst(build)
	fs := w.read(5*time.Second, isClose)
	r.expect(fs, "the connection closed", has(fs, isClose))
	r.counted(map[string]int64{stat: 1, "downstream_cx_delayed_close_timeout": 1})
}

var envoyCases = []envoyCase{
	// http2_flood_integration_test.cc, Http2FloodMitigationTest: the downstream floods.
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "Ping", Knobs: floodLimits, Run: func(r *replay) {
		// Envoy's writes fail (EAGAIN) so the ACKs queue; here the 101 PINGs arrive in one read
		// and their ACKs queue in the dispatch before any is written, as they do in Envoy.
		r.floodServer(r.dial(true), "http2.outbound_control_flood", func(fr *http2.Framer) {
			for i := range 101 {
				_ = fr.WritePing(false, [8]byte{byte(i)})
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "Settings", Knobs: floodLimits, Run: func(r *replay) {
		r.floodServer(r.dial(true), "http2.outbound_control_flood", func(fr *http2.Framer) {
			for range 101 {
				_ = fr.WriteSettings()
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "EmptyHeaders", Knobs: with(floodLimits, "hcm.http2_protocol_options.max_consecutive_inbound_frames_with_empty_payload=0"), Run: func(r *replay) {
		r.floodServer(r.dial(true), "http2.inbound_empty_frames_flood", func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true})
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "EmptyHeadersContinuation", Knobs: floodLimits, Run: func(r *replay) {
		r.floodServer(r.dial(true), "http2.inbound_empty_frames_flood", func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1})
			_ = fr.WriteContinuation(1, false, nil)
			_ = fr.WriteContinuation(1, false, nil)
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "EmptyData", Knobs: floodLimits, Run: func(r *replay) {
		w := r.dial(true)
		r.floodServer(w, "http2.inbound_empty_frames_flood", func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: w.block(get("POST", "/post")...), EndHeaders: true})
			_ = fr.WriteData(1, false, nil)
			_ = fr.WriteData(1, false, nil)
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "PriorityIdleStream", Knobs: floodLimits, Run: func(r *replay) {
		// DEFAULT_MAX_INBOUND_PRIORITY_FRAMES_PER_STREAM + 1 on a stream never opened.
		r.floodServer(r.dial(true), "http2.inbound_priority_frames_flood", func(fr *http2.Framer) {
			for range 101 {
				_ = fr.WritePriority(1, http2.PriorityParam{StreamDep: 3, Weight: 15})
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "PriorityOpenStream", Knobs: floodLimits, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, get("GET", "/delay/2")...) // open while the flood arrives
		r.floodServer(w, "http2.inbound_priority_frames_flood", func(fr *http2.Framer) {
			for range 201 {
				_ = fr.WritePriority(1, http2.PriorityParam{StreamDep: 3, Weight: 15})
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "PriorityClosedStream", Knobs: floodLimits, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, get("GET", "/get")...)
		fs := w.read(5*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "the response, which closes the stream", has(fs, isStatus(1, "200")))
		r.floodServer(w, "http2.inbound_priority_frames_flood", func(fr *http2.Framer) {
			for range 201 {
				_ = fr.WritePriority(1, http2.PriorityParam{StreamDep: 3, Weight: 15})
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "WindowUpdate", Knobs: floodLimits, Run: func(r *replay) {
		// 5 + 2 x (1 stream + 10 x 0 DATA frames sent) allowed: the 8th is the flood. The
		// test's upstream never answers; /delay keeps the response (and its DATA) away.
		w := r.dial(true)
		w.headers(1, true, get("GET", "/delay/2")...)
		r.floodServer(w, "http2.inbound_window_update_frames_flood", func(fr *http2.Framer) {
			for range 8 {
				_ = fr.WriteWindowUpdate(1, 1)
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "ZerolenHeader", Knobs: floodLimits, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, get("GET", "/get", "", "v")...)
		fs := w.read(5*time.Second, isClose)
		r.expect(fs, "the connection closed (a connection error)", has(fs, isClose) && !has(fs, isStatus(1, "200")))
		r.counted(map[string]int64{"http2.rx_messaging_error": 1, "downstream_cx_delayed_close_timeout": 1})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "ZerolenHeaderAllowed", Knobs: with(floodLimits, "hcm.http2_protocol_options.override_stream_error_on_invalid_http_message=true"), Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, get("GET", "/get", "", "v")...)
		fs := w.read(5*time.Second, func(f frame) bool { return f.typ == http2.FrameRSTStream })
		r.expect(fs, "RST_STREAM on the malformed stream", has(fs, func(f frame) bool { return f.typ == http2.FrameRSTStream && f.stream == 1 }))
		w.headers(3, true, get("GET", "/get")...)
		fs = w.read(5*time.Second, func(f frame) bool { return f.stream == 3 && f.typ == http2.FrameHeaders })
		r.expect(fs, "the next request on the connection served", has(fs, isStatus(3, "200")))
		r.counted(map[string]int64{"http2.rx_messaging_error": 1, "downstream_cx_delayed_close_timeout": 0})
	}},

	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "RST_STREAM", Knobs: with(floodLimits, "hcm.http2_protocol_options.override_stream_error_on_invalid_http_message=true"), Run: func(r *replay) {
		// A malformed request (a response's :status and nothing else) is reset; 101 more in
		// one write queue 101 RST_STREAMs, past the 100 control frames.
		w := r.dial(true)
		w.headers(1, true, ":status", "200")
		fs := w.read(3*time.Second, func(f frame) bool { return f.typ == http2.FrameRSTStream })
		r.expect(fs, "RST_STREAM on the malformed request", has(fs, func(f frame) bool { return f.typ == http2.FrameRSTStream && f.stream == 1 }))
		r.floodServer(w, "http2.outbound_control_flood", func(fr *http2.Framer) {
			for i := range 101 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 3), BlockFragment: w.block(":status", "200"), EndStream: true, EndHeaders: true})
			}
		})
	}},
	{File: flood, Fixture: "Http2FloodMitigationTest", Test: "TooManyStreams", Knobs: with(floodLimits, "hcm.http2_protocol_options.max_concurrent_streams=2"), Run: func(r *replay) {
		// A first request answered (its SETTINGS acknowledged on the way), then three that
		// the upstream holds: the third is one stream over the acknowledged cap, a connection
		// error. The test blocks the upstream's writes; /delay holds the answers.
		w := r.dial(true)
		w.headers(1, true, get("GET", "/get")...)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "the first request served", has(fs, isStatus(1, "200")))
		w.burst(func(fr *http2.Framer) {
			for _, id := range []uint32{3, 5, 7} {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: w.block(get("GET", "/delay/10")...), EndStream: true, EndHeaders: true})
			}
		})
		fs = w.read(5*time.Second, isClose)
		r.expect(fs, "the connection closed", has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_delayed_close_timeout": 1})
	}},

	// idle_timeout_integration_test.cc, IdleTimeoutIntegrationTest: the test's route
	// idle_timeout and the connection manager's stream_idle_timeout run the same per-stream
	// timer (ConnectionManagerImpl::ActiveStream, the route's overriding the connection
	// manager's); the pool takes the connection manager's. 300 ms as IdleTimeoutMs.
	{File: idle, Fixture: "IdleTimeoutIntegrationTest", Test: "GlobalPerStreamIdleTimeoutAfterDownstreamHeaders", Knobs: []string{"hcm.stream_idle_timeout=0.3s"}, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, false, get("GET", "/get")...) // the request never ends
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, `408 "stream timeout"`, has(fs, isStatus(1, "408")) && has(fs, func(f frame) bool { return f.typ == http2.FrameData && f.bodyBytes == len("stream timeout") }))
		r.counted(map[string]int64{"downstream_rq_idle_timeout": 1})
	}},
	{File: idle, Fixture: "IdleTimeoutIntegrationTest", Test: "PerStreamIdleTimeoutHeadRequestAfterDownstreamHeadRequest", Knobs: []string{"hcm.stream_idle_timeout=0.3s"}, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, false, get("HEAD", "/get")...)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "408 with no body", has(fs, isStatus(1, "408")) && !has(fs, func(f frame) bool { return f.typ == http2.FrameData && f.bodyBytes > 0 }))
		r.counted(map[string]int64{"downstream_rq_idle_timeout": 1})
	}},
	{File: idle, Fixture: "IdleTimeoutIntegrationTest", Test: "PerStreamIdleTimeoutAfterDownstreamHeadersAndBody", Knobs: []string{"hcm.stream_idle_timeout=0.3s"}, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, false, get("POST", "/post")...)
		time.Sleep(150 * time.Millisecond) // half the timeout
		w.data(1, false, []byte("a"))
		start := time.Now()
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "408 a timeout after the byte", has(fs, isStatus(1, "408")) && time.Since(start) >= 250*time.Millisecond)
		r.counted(map[string]int64{"downstream_rq_idle_timeout": 1})
	}},
	{File: idle, Fixture: "IdleTimeoutIntegrationTest", Test: "PerStreamIdleTimeoutAfterUpstreamHeaders", Knobs: []string{"hcm.stream_idle_timeout=0.3s"}, Run: func(r *replay) {
		// The test's upstream sends its headers and stops; /drip sends its headers and then a
		// byte a second. Envoy resets the started response with RST_STREAM NO_ERROR.
		w := r.dial(true)
		w.headers(1, true, get("GET", "/drip?duration=3&numbytes=3&delay=0")...)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.typ == http2.FrameRSTStream })
		r.expect(fs, "HEADERS 200, then RST_STREAM NO_ERROR", has(fs, isStatus(1, "200")) && has(fs, isReset(1, http2.ErrCodeNo)))
		r.counted(map[string]int64{"downstream_rq_idle_timeout": 1})
	}},
	{File: idle, Fixture: "IdleTimeoutIntegrationTest", Test: "PerStreamIdleTimeoutRequestAndResponse", Knobs: []string{"hcm.stream_idle_timeout=0.3s"}, Run: func(r *replay) {
		// testRouterRequestAndResponseWithBody(1024, 1024): a timeout never reached.
		w := r.dial(true)
		w.headers(1, false, get("POST", "/anything")...)
		w.data(1, true, make([]byte, 1024))
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "200 and the whole response", has(fs, isStatus(1, "200")) && has(fs, func(f frame) bool { return f.stream == 1 && f.end }))
		r.counted(map[string]int64{"downstream_rq_idle_timeout": 0, "downstream_rq_2xx": 1})
	}},
	// Two of the connection manager's own tests (test/common/http/conn_manager_impl_test.cc,
	// HttpConnectionManagerImplTest): black-box too, as a client that never speaks.
	{File: hcmUnit, Fixture: "HttpConnectionManagerImplTest", Test: "IdleTimeoutNoCodec", Knobs: []string{"hcm.common_http_protocol_options.idle_timeout=1s"}, Run: func(r *replay) {
		r.silentClose(time.Second, "downstream_cx_idle_timeout")
	}},
	{File: hcmUnit, Fixture: "HttpConnectionManagerImplTest", Test: "ConnectionDurationNoCodec", Knobs: []string{"hcm.common_http_protocol_options.max_connection_duration=1s"}, Run: func(r *replay) {
		r.silentClose(time.Second, "downstream_cx_max_duration_reached")
	}},

	// multiplexed_integration_test.cc, MultiplexedIntegrationTest: at both codecs where the
	// test checks what each says.
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "BadFrame", Run: badFrame(false)},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "BadFrame", Codec: "nghttp2", Run: badFrame(false)},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "DelayedCloseAfterBadFrame", Run: badFrame(true)},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "DelayedCloseAfterBadFrame", Codec: "nghttp2", Run: badFrame(true)},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "CodecErrorAfterStreamStart", Run: codecErrorAfterStreamStart},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "CodecErrorAfterStreamStart", Codec: "nghttp2", Run: codecErrorAfterStreamStart},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "CodecStreamIdleTimeout", Knobs: []string{"hcm.stream_idle_timeout=0.4s", "listener.per_connection_buffer_limit_bytes=1024"}, Run: func(r *replay) {
		// setBufferLimits(1024, 1024), stream_idle_timeout 400 ms: a response of 65535 + 2000
		// bytes against the client's 65535-byte window, never opened further. The response is
		// complete upstream but stuck in the codec: its flush timer (stream_flush_timeout, by
		// default stream_idle_timeout) resets it.
		w := r.dial(true)
		w.headers(1, true, get("GET", "/bytes/67535")...)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.typ == http2.FrameRSTStream })
		r.expect(fs, "the stream reset", has(fs, func(f frame) bool { return f.stream == 1 && f.typ == http2.FrameRSTStream }))
		r.counted(map[string]int64{"http2.tx_flush_timeout": 1})
	}},
	{File: mux, Fixture: "Http2FrameIntegrationTest", Test: "MaxConcurrentStreamsIsRespected", Knobs: []string{"hcm.http2_protocol_options.max_concurrent_streams=100"}, Run: func(r *replay) {
		// After the client acknowledged the cap, 101 requests in one write, none answered yet.
		w := r.dial(true)
		w.read(time.Second, func(f frame) bool { return f.typ == http2.FrameSettings }) // acknowledged as read
		w.burst(func(fr *http2.Framer) {
			for i := range 101 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: w.block(get("GET", "/delay/10")...), EndStream: true, EndHeaders: true})
			}
		})
		fs := w.read(5*time.Second, isClose)
		r.expect(fs, "the connection closed", has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_destroy_local": 1})
	}},
	{File: mux, Fixture: "MultiplexedIntegrationTest", Test: "GoAway", Run: func(r *replay) {
		// The client's GOAWAY between a request's headers and its end: the request still
		// completes.
		w := r.dial(true)
		w.headers(1, false, get("GET", "/get")...)
		if err := w.fr.WriteGoAway(0, http2.ErrCodeNo, nil); err != nil {
			r.t.Fatal(err)
		}
		w.data(1, true, nil)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.end })
		r.expect(fs, "200 and the whole response", has(fs, isStatus(1, "200")) && has(fs, func(f frame) bool { return f.stream == 1 && f.end }))
	}},
	{File: mux, Fixture: "MultiplexedIntegrationTestWithSimulatedTime", Test: "GoAwayQuicklyAfterTooManyResets", Run: func(r *replay) {
		// The test lowers overload.premature_reset_total_stream_count to 100 and resets 50
		// streams; at the default 500 it takes 250 streams reset before a response. The test
		// also turns on envoy.restart_features.send_goaway_for_premature_rst_streams (a GOAWAY
		// before the close), off by default, so here the connection just closes.
		w := r.dial(true)
		w.burst(func(fr *http2.Framer) {
			for i := range 250 {
				id := uint32(2*i + 1)
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: w.block(get("GET", "/delay/2")...), EndHeaders: true})
				_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
		})
		fs := w.read(5*time.Second, isClose)
		r.expect(fs, "the connection closed", has(fs, isClose))
		r.counted(map[string]int64{"downstream_rq_rx_reset": 250, "downstream_rq_too_many_premature_resets": 1})
	}},

	// multiplexed_integration_test.cc, Http2FrameIntegrationTest (raw frames).
	{File: mux, Fixture: "Http2FrameIntegrationTest", Test: "HostBeforeAuthorityIsRejected", Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, ":method", "GET", ":scheme", "http", ":path", "/get", "host", "lab.local", ":authority", "lab.local")
		fs := w.read(3*time.Second, isClose)
		r.expect(fs, "a close and no response", has(fs, isClose) && !has(fs, func(f frame) bool { return f.typ == http2.FrameHeaders }))
		r.counted(map[string]int64{"downstream_cx_protocol_error": 1})
	}},

	// protocol_integration_test.cc: ProtocolIntegrationTest and
	// DownstreamProtocolIntegrationTest, the HTTP/2 downstream.
	{File: protocol, Fixture: "ProtocolIntegrationTest", Test: "ConnDurationTimeoutBasic", Knobs: connDuration, Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, false, get("POST", "/post")...)
		w.data(1, true, make([]byte, 1024))
		fs := w.read(10*time.Second, isClose)
		r.expect(fs, "the response, then the connection drained and closed", has(fs, isStatus(1, "200")) && has(fs, isGoAway(http2.ErrCodeNo)) && has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_max_duration_reached": 1})
	}},
	{File: protocol, Fixture: "ProtocolIntegrationTest", Test: "ConnDurationInflightRequest", Knobs: connDuration, Run: func(r *replay) {
		// The upstream answers after the 500 ms: the drain lets the request finish.
		w := r.dial(true)
		w.headers(1, false, get("POST", "/delay/1")...)
		w.data(1, true, make([]byte, 1024))
		fs := w.read(10*time.Second, isClose)
		r.expect(fs, "the in-flight request completed, then the close", has(fs, isStatus(1, "200")) && has(fs, func(f frame) bool { return f.stream == 1 && f.end }) && has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_max_duration_reached": 1})
	}},
	{File: protocol, Fixture: "ProtocolIntegrationTest", Test: "ConnDurationTimeoutNoHttpRequest", Knobs: connDuration, Run: func(r *replay) {
		w := r.dial(true)
		fs := w.read(10*time.Second, isClose)
		r.expect(fs, "the connection closed", has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_max_duration_reached": 1})
	}},
	{File: protocol, Fixture: "ProtocolIntegrationTest", Test: "TestDownstreamResetIdleTimeout", Knobs: []string{"hcm.common_http_protocol_options.idle_timeout=0.1s"}, Run: func(r *replay) {
		// The client resets its only stream: the connection, now idle, drains (GOAWAY) and
		// closes when the drain timeout (5 s) has passed (ConnectionManagerImpl::onIdleTimeout,
		// startDrainSequence).
		w := r.dial(true)
		w.headers(1, false, get("POST", "/post")...)
		if err := w.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
			r.t.Fatal(err)
		}
		fs := w.read(8*time.Second, isClose)
		r.expect(fs, "the idle connection closed", has(fs, isClose))
		r.counted(map[string]int64{"downstream_cx_idle_timeout": 1, "downstream_rq_rx_reset": 1})
	}},
	{File: protocol, Fixture: "ProtocolIntegrationTest", Test: "MultipleSetCookies", Run: func(r *replay) {
		// The upstream sends two set-cookie headers; they reach the client as two.
		w := r.dial(true)
		w.headers(1, true, get("GET", "/response-headers?set-cookie=foo&set-cookie=bar")...)
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && f.typ == http2.FrameHeaders })
		var cookies []string
		for _, f := range fs {
			for _, h := range f.fields {
				if v, ok := strings.CutPrefix(h, "set-cookie: "); ok {
					cookies = append(cookies, v)
				}
			}
		}
		r.expect(fs, "set-cookie foo and set-cookie bar, apart", strings.Join(cookies, ",") == "foo,bar")
	}},
	{File: protocol, Fixture: "DownstreamProtocolIntegrationTest", Test: "MaxRequestsPerConnectionReached", Knobs: []string{"hcm.common_http_protocol_options.max_requests_per_connection=2"}, Run: func(r *replay) {
		w := r.dial(true)
		var all []frame
		for _, id := range []uint32{1, 3} {
			w.headers(id, false, get("POST", "/anything")...)
			w.data(id, true, []byte("a"))
			fs := w.read(3*time.Second, func(f frame) bool { return f.stream == id && f.end })
			r.expect(fs, "200", has(fs, isStatus(id, "200")))
			all = append(all, fs...)
			if id == 1 {
				r.counted(map[string]int64{"downstream_cx_max_requests_reached": 0})
			}
		}
		// The second request started the drain: GOAWAY, then the close after drain_timeout.
		all = append(all, w.read(8*time.Second, isClose)...)
		r.expect(all, "a GOAWAY and the close", has(all, isGoAway(http2.ErrCodeNo)) && has(all, isClose))
		r.counted(map[string]int64{"downstream_cx_max_requests_reached": 1})
	}},
	{File: protocol, Fixture: "DownstreamProtocolIntegrationTest", Test: "InvalidAuthority", Run: func(r *replay) {
		w := r.dial(true)
		w.headers(1, true, ":method", "POST", ":path", "/post", ":scheme", "http", ":authority", "ho|st|")
		fs := w.read(3*time.Second, isClose)
		r.expect(fs, "the connection closed without a response", has(fs, isClose) && !has(fs, func(f frame) bool { return f.typ == http2.FrameHeaders }))
		r.counted(map[string]int64{"http2.rx_messaging_error": 1})
	}},
	{File: protocol, Fixture: "DownstreamProtocolIntegrationTest", Test: "ConnectStreamRejection", Knobs: []string{"hcm.http2_protocol_options.override_stream_error_on_invalid_http_message=true"}, Run: func(r *replay) {
		// CONNECT with a :path is malformed; with stream errors on, only its stream ends.
		w := r.dial(true)
		w.headers(1, true, ":method", "CONNECT", ":path", "/", ":authority", "host")
		fs := w.read(3*time.Second, func(f frame) bool { return f.stream == 1 && (f.typ == http2.FrameRSTStream || f.end) })
		r.expect(fs, "the stream reset", has(fs, func(f frame) bool { return f.typ == http2.FrameRSTStream && f.stream == 1 }))
		w.headers(3, true, get("GET", "/get")...)
		fs = w.read(3*time.Second, func(f frame) bool { return f.stream == 3 && f.typ == http2.FrameHeaders })
		r.expect(fs, "the connection still serving", has(fs, isStatus(3, "200")))
	}},
}

// silentClose: a connection that never sends a byte is closed after d with nothing sent, and
// stat counted.
func (r *replay) silentClose(d time.Duration, stat string) {
	r.t.Helper()
	w := r.dial(false)
	start := time.Now()
	_ = w.c.SetReadDeadline(start.Add(d + 4*time.Second))
	n, err := w.c.Read(make([]byte, 64))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		r.t.Fatalf("still open after %s", time.Since(start).Round(time.Millisecond))
	case n != 0 || !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset"):
		r.t.Errorf("read %d bytes, %v: want a close with nothing sent", n, err)
	case time.Since(start) < d-100*time.Millisecond:
		r.t.Errorf("closed after %s, before the %s timeout", time.Since(start).Round(time.Millisecond), d)
	}
	r.counted(map[string]int64{stat: 1, "downstream_cx_http2_total": 0})
}

// badFrame is BadFrame and, with delayed, DelayedCloseAfterBadFrame: bytes that are not a frame
// where the client's SETTINGS must come first. oghttp2 reads them as an oversized frame
// ("ParseError"), nghttp2 as a first frame that is not SETTINGS ("SETTINGS expected").
func badFrame(delayed bool) func(r *replay) {
	return func(r *replay) {
		w := r.dial(false)
		if _, err := io.WriteString(w.c, clientPreface+"helloworldcauseanerror"); err != nil {
			r.t.Fatal(err)
		}
		fs := w.read(5*time.Second, isClose)
		r.expect(fs, `GOAWAY "ParseError" (oghttp2) or "SETTINGS expected" (nghttp2), and a close`,
			has(fs, func(f frame) bool {
				return f.typ == http2.FrameGoAway && (f.debug == "ParseError" || f.debug == "SETTINGS expected")
			}) && has(fs, isClose))
		want := map[string]int64{"downstream_cx_protocol_error": 1}
		if delayed {
			want["downstream_cx_delayed_close_timeout"] = 1
		}
		r.counted(want)
	}
}

// codecErrorAfterStreamStart: bytes that are no frame on a connection with a request in
// flight: a connection error, the stream reset with the connection.
func codecErrorAfterStreamStart(r *replay) {
	w := r.dial(true)
	w.headers(1, false, get("POST", "/delay/1")...)
	w.data(1, true, make([]byte, 10))
	time.Sleep(100 * time.Millisecond) // the request is upstream
	if _, err := io.WriteString(w.c, "some really bogus data"); err != nil {
		r.t.Fatal(err)
	}
	fs := w.read(5*time.Second, isClose)
	r.expect(fs, "a GOAWAY and the close, no response", has(fs, func(f frame) bool { return f.typ == http2.FrameGoAway }) && has(fs, isClose) && !has(fs, isStatus(1, "200")))
	r.counted(map[string]int64{"downstream_cx_protocol_error": 1})
}
