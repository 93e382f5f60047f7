package emulator

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/stacks"
)

// An extension frame longer than SETTINGS_MAX_FRAME_SIZE is a connection error like any
// oversized frame: quiche checks every frame's length before it looks at the type
// (http2_frame_decoder.cc, Http2FrameDecoder::StartDecodingPayload; the adapter's
// OnFrameSizeError makes it SPDY_CONTROL_PAYLOAD_TOO_LARGE), nghttp2 as it reads the header
// (nghttp2_session_mem_recv2, NGHTTP2_IB_READ_HEAD). GOAWAY FRAME_SIZE_ERROR, a close, and the
// connection manager's protocol error, as for any codec error (Envoy
// test/integration/multiplexed_integration_test.cc, CodecErrorAfterStreamStart).
func TestOversizedUnknownFrame(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, stacks.Knobs{}).Pods()[0]
			rc := dialRaw(t, pod.Addr(), true)
			if err := rc.fr.WriteRawFrame(0xaa, 0, 0, make([]byte, 16385)); err != nil {
				t.Fatal(err)
			}
			frames, _ := rc.read(3*time.Second, nil)
			var goaway *frameInfo
			for i, f := range frames {
				if f.typ == http2.FrameGoAway {
					goaway = &frames[i]
				}
			}
			if goaway == nil || goaway.code != http2.ErrCodeFrameSize {
				t.Fatalf("frames %+v: want GOAWAY FRAME_SIZE_ERROR and a close", frames)
			}
			checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_cx_protocol_error"): 1})
		})
	}
}

// A connection that never sends a byte is closed by the idle timeout and by
// max_connection_duration, which the connection manager arms as it accepts the connection,
// before any codec exists: counted, closed, nothing sent (ConnectionManagerImpl::
// initializeReadFilterCallbacks arms them; onIdleTimeout and onConnectionDurationTimeout close
// when codec_ is null; Envoy test/common/http/conn_manager_impl_test.cc, HttpConnectionManagerImplTest
// IdleTimeoutNoCodec and ConnectionDurationNoCodec).
func TestTimeoutsBeforeAnyCodec(t *testing.T) {
	for _, c := range []struct{ knob, stat string }{
		{"hcm.common_http_protocol_options.idle_timeout", "downstream_cx_idle_timeout"},
		{"hcm.common_http_protocol_options.max_connection_duration", "downstream_cx_max_duration_reached"},
	} {
		t.Run(c.stat, func(t *testing.T) {
			pod := testPool(t, Config{}, knobs(t, c.knob, "1s")).Pods()[0]
			conn, err := net.DialTimeout("tcp", pod.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			_ = conn.SetReadDeadline(start.Add(5 * time.Second))
			n, err := conn.Read(make([]byte, 64))
			if n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("read %d bytes, %v after %s: want the gateway to close with nothing sent", n, err, time.Since(start).Round(time.Millisecond))
			}
			if took := time.Since(start); took < 900*time.Millisecond {
				t.Errorf("closed after %s, before the 1 s timeout", took)
			}
			checkStats(t, pod, map[string]int64{hcmName(pod, c.stat): 1, hcmName(pod, "downstream_cx_http2_total"): 0})
		})
	}
}

// A host header before :authority: host sets the authority, so the :authority after it is a
// second one and the request is malformed (quiche header_validator.cc,
// HeaderValidator::ValidateSingleHeader and RecordPseudoHeader; nghttp2 refuses any
// pseudo-header after a regular one, nghttp2_http.c http_request_on_header). By default the
// codec makes that a connection error (Envoy test/integration/multiplexed_integration_test.cc,
// Http2FrameIntegrationTest.HostBeforeAuthorityIsRejected). :authority before host is served.
func TestHostBeforeAuthority(t *testing.T) {
	for _, codec := range []string{CodecOghttp2, CodecNghttp2} {
		t.Run(codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: codec}, stacks.Knobs{}).Pods()[0]
			send := func(rc *rawClient, id uint32, fields ...hpack.HeaderField) {
				rc.hbuf.Reset()
				for _, f := range fields {
					_ = rc.enc.WriteField(f)
				}
				if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.hbuf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
					t.Fatal(err)
				}
			}
			method, scheme, path := hpack.HeaderField{Name: ":method", Value: "GET"}, hpack.HeaderField{Name: ":scheme", Value: "http"}, hpack.HeaderField{Name: ":path", Value: "/get"}
			authority, host := hpack.HeaderField{Name: ":authority", Value: "lab.local"}, hpack.HeaderField{Name: "host", Value: "lab.local"}

			ok := dialRaw(t, pod.Addr(), true)
			send(ok, 1, method, scheme, path, authority, host)
			if frames, err := ok.read(3*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameHeaders }); err != nil || frames[len(frames)-1].status != "200" {
				t.Fatalf(":authority then host: %+v %v, want 200", frames, err)
			}

			rc := dialRaw(t, pod.Addr(), true)
			send(rc, 1, method, scheme, path, host, authority)
			rc.closedWithout(3*time.Second, http2.FrameHeaders)
			checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_cx_protocol_error"): 1})
		})
	}
}

// Bytes that are not a frame where the client's SETTINGS must come first: oghttp2 reads them
// as a frame header whose length is far over the frame size and fails them as it does any
// oversized frame (see TestOversizedUnknownFrame): GOAWAY FRAME_SIZE_ERROR "ParseError";
// nghttp2 checks first that the first frame is a SETTINGS: GOAWAY PROTOCOL_ERROR "SETTINGS
// expected" (nghttp2_session_mem_recv2, NGHTTP2_IB_READ_FIRST_SETTINGS). Either way the gateway
// sends its SETTINGS and the GOAWAY and closes after the delayed-close timeout (Envoy
// test/integration/multiplexed_integration_test.cc, BadFrame and DelayedCloseAfterBadFrame,
// which send these bytes and expect those details; codec_impl.cc and conn_manager_impl.cc count
// the protocol error and the delayed close).
func TestGarbageBeforeSettings(t *testing.T) {
	for _, c := range []struct {
		codec, detail string
		code          http2.ErrCode
	}{{CodecOghttp2, "ParseError", http2.ErrCodeFrameSize}, {CodecNghttp2, "SETTINGS expected", http2.ErrCodeProtocol}} {
		t.Run(c.codec, func(t *testing.T) {
			pod := testPool(t, Config{Codec: c.codec}, stacks.Knobs{}).Pods()[0]
			conn, err := net.DialTimeout("tcp", pod.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, clientPreface+"helloworldcauseanerror"); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("%v after %q: want the gateway to close", err, got)
			}
			fr := http2.NewFramer(nil, bytes.NewReader(got))
			var goaway *http2.GoAwayFrame
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					break
				}
				if g, ok := f.(*http2.GoAwayFrame); ok {
					goaway = g
				}
			}
			if goaway == nil || goaway.ErrCode != c.code || string(goaway.DebugData()) != c.detail {
				t.Fatalf("got %q: want SETTINGS then GOAWAY %v %q", got, c.code, c.detail)
			}
			checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_cx_protocol_error"): 1, hcmName(pod, "downstream_cx_delayed_close_timeout"): 1})
		})
	}
}

// stream_idle_timeout on a response already started: Envoy resets the stream, and its codec
// sends every local reset but a refused stream and a CONNECT error as RST_STREAM NO_ERROR
// (source/common/http/http2/codec_impl.cc, reasonToReset; Envoy
// test/integration/idle_timeout_integration_test.cc, PerStreamIdleTimeoutAfterUpstreamHeaders).
func TestStreamIdleResetIsNoError(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t, "hcm.stream_idle_timeout", "0.3s")).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.headers(1, "GET", "/drip?duration=3&numbytes=3&delay=0", true) // a byte a second after the headers
	frames, err := rc.read(3*time.Second, func(f frameInfo) bool { return f.stream == 1 && f.typ == http2.FrameRSTStream })
	if err != nil {
		t.Fatalf("frames %+v: %v, want the started response reset", frames, err)
	}
	sawHeaders := false
	for _, f := range frames {
		sawHeaders = sawHeaders || f.stream == 1 && f.typ == http2.FrameHeaders && f.status == "200"
	}
	if last := frames[len(frames)-1]; !sawHeaders || last.code != http2.ErrCodeNo {
		t.Fatalf("frames %+v: want HEADERS 200, then RST_STREAM NO_ERROR", frames)
	}
	checkStats(t, pod, map[string]int64{hcmName(pod, "downstream_rq_idle_timeout"): 1})
}

// A complete response stuck behind the client's zero window: the connection manager is done
// with the stream, and the codec's flush timer (stream_flush_timeout, which defaults to
// stream_idle_timeout) resets it, counted in http2.tx_flush_timeout, not as a request idle
// timeout (codec_impl.cc StreamImpl::onPendingFlushTimer; Envoy
// test/integration/multiplexed_integration_test.cc, CodecStreamIdleTimeout).
func TestFlushTimeoutBehindAZeroWindow(t *testing.T) {
	pod := testPool(t, Config{}, knobs(t, "hcm.stream_idle_timeout", "0.3s")).Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	if err := rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1024}); err != nil {
		t.Fatal(err)
	}
	rc.headers(1, "GET", "/bytes/4096", true)
	var got []string
	deadline := time.Now().Add(3 * time.Second)
	for {
		_ = rc.c.SetReadDeadline(deadline)
		f, err := rc.fr.ReadFrame() // no WINDOW_UPDATE: the window stays shut
		if err != nil {
			t.Fatalf("frames %v: %v, want the stream reset", got, err)
		}
		if f.Header().StreamID != 1 {
			continue
		}
		got = append(got, f.Header().Type.String())
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			if r.ErrCode != http2.ErrCodeNo {
				t.Errorf("RST_STREAM %v, want NO_ERROR", r.ErrCode)
			}
			break
		}
	}
	checkStats(t, pod, map[string]int64{"http2.tx_flush_timeout": 1, hcmName(pod, "downstream_rq_idle_timeout"): 0, "http2.tx_reset": 1, hcmName(pod, "downstream_rq_active"): 0})
}
