package emulator

import (
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
