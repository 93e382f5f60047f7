package emulator

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/stacks"
)

// An extension frame longer than SETTINGS_MAX_FRAME_SIZE is a connection error like any
// oversized frame: quiche checks every frame's length before it looks at the type
// (http2_frame_decoder.cc, Http2FrameDecoder::StartDecodingPayload; the adapter's
// OnFrameSizeError makes it SPDY_CONTROL_PAYLOAD_TOO_LARGE), nghttp2 as it reads the header
// (nghttp2_session_mem_recv2, NGHTTP2_IB_READ_HEAD). GOAWAY FRAME_SIZE_ERROR, a close, and the
// connection manager's protocol error (Envoy test/integration/multiplexed_integration_test.cc,
// BadFrame: a codec error on a frame the codec cannot take).
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
// when codec_ is null; Envoy test/integration/idle_timeout_integration_test.cc, IdleTimeoutNoCodec
// and ConnectionDurationNoCodec).
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
