package emulator

import (
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// HTTP/2 flow control and buffer limits as Envoy's codec (codec_impl.cc: onData,
// shouldAllowPeerAdditionalStreamWindow, per_stream_buffer_limit_) runs its HTTP/2 library.

// sendBody writes n bytes of DATA on a stream in frames of at most 16 KiB.
func (rc *rawClient) sendBody(id uint32, n int) {
	rc.t.Helper()
	chunk := make([]byte, 16384)
	for n > 0 {
		m := min(n, len(chunk))
		if err := rc.fr.WriteData(id, false, chunk[:m]); err != nil {
			rc.t.Fatal(err)
		}
		n -= m
	}
}

// windowUpdates sums the WINDOW_UPDATE increments per stream among frames.
func windowUpdates(frames []frameInfo) map[uint32]uint32 {
	out := map[uint32]uint32{}
	for _, f := range frames {
		if f.typ == http2.FrameWindowUpdate {
			out[f.stream] += f.increment
		}
	}
	return out
}

// pushUntilWithheld sends a request body on stream id as fast as the stream's window allows,
// to an upstream that does not read it yet (go-httpbin's /delay sleeps before it reads). The
// bytes move on to the upstream until its socket buffers are full; then the stream's buffer
// fills and the gateway stops giving window back. It returns the body bytes sent and the
// window given back, once no WINDOW_UPDATE came for a while with the stream's window spent.
func (rc *rawClient) pushUntilWithheld(id uint32, window int) (sent, given int) {
	rc.t.Helper()
	credit := window
	chunk := make([]byte, 16384)
	for sent < 64<<20 {
		for credit > 0 {
			n := min(credit, len(chunk))
			if err := rc.fr.WriteData(id, false, chunk[:n]); err != nil {
				rc.t.Fatal(err)
			}
			sent, credit = sent+n, credit-n
		}
		frames, err := rc.read(300*time.Millisecond, func(f frameInfo) bool {
			return f.typ == http2.FrameWindowUpdate && f.stream == id
		})
		if err != nil && !isTimeout(err) {
			rc.t.Fatalf("reading after %d body bytes: %v", sent, err)
		}
		inc := int(windowUpdates(frames)[id])
		if inc == 0 {
			return sent, given
		}
		given += inc
		credit += inc
	}
	rc.t.Fatalf("the gateway gave back the window for 64 MiB an upstream never read")
	return 0, 0
}

// A stream's data is given back (WINDOW_UPDATE) as it arrives, and handed to the upstream, until
// the upstream stops reading and the stream's buffer is over initial_stream_window_size; then
// the window is withheld, and a client that sends past it gets RST_STREAM FLOW_CONTROL_ERROR, a
// stream error: the connection lives on.
func TestStreamWindowAndBufferLimit(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.http2_protocol_options.initial_stream_window_size", "65535",
		"hcm.http2_protocol_options.initial_connection_window_size", "268435456"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.headers(1, "POST", "/delay/5", false)
	sent, given := rc.pushUntilWithheld(1, 65535)
	// What was given back is everything but one window: the stream's buffer holds that much,
	// over its limit, and the client has no window left.
	if sent != given+65535 || given < 65535 {
		t.Fatalf("sent %d body bytes, %d given back: want all but the 65535 the stream buffers (and more than one window given back on arrival)", sent, given)
	}
	rc.sendBody(1, 1) // past the stream's window
	frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameRSTStream })
	if err != nil || frames[len(frames)-1].code != http2.ErrCodeFlowControl || frames[len(frames)-1].stream != 1 {
		t.Fatalf("sending past the stream window: %v %+v, want RST_STREAM FLOW_CONTROL_ERROR on stream 1", err, frames)
	}
	for stat, want := range map[string]int64{
		hcmName(pod, "downstream_cx_protocol_error"): 0,
		hcmName(pod, "downstream_cx_active"):         1,
		"http2.tx_reset":                             1,
	} {
		if n := statValue(t, pod, stat); n != want {
			t.Errorf("after a stream error: %s = %d, want %d", stat, n, want)
		}
	}
}

// The connection's receive window is enforced too: past it is a connection error, GOAWAY
// FLOW_CONTROL_ERROR, counted in downstream_cx_protocol_error.
func TestConnectionWindowIsEnforced(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.http2_protocol_options.initial_stream_window_size", "65535",
		"hcm.http2_protocol_options.initial_connection_window_size", "65535"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	rc.headers(1, "POST", "/delay/5", false)
	rc.headers(3, "POST", "/anything", false)
	// Once stream 1's upstream stops reading, its buffer holds a whole window and the
	// connection's window (no larger) is spent with it: one byte on stream 3 is past it.
	rc.pushUntilWithheld(1, 65535)
	rc.sendBody(3, 1)
	frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameGoAway })
	if err != nil || frames[len(frames)-1].code != http2.ErrCodeFlowControl {
		t.Fatalf("sending past the connection window: %v %+v, want GOAWAY FLOW_CONTROL_ERROR", err, frames)
	}
	if n := waitStat(t, pod, hcmName(pod, "downstream_cx_protocol_error"), 1); n != 1 {
		t.Fatalf("downstream_cx_protocol_error = %d, want 1", n)
	}
}

// A response waits in its stream's send buffer for the client's window. Over the per-stream
// limit (initial_stream_window_size) the router stops reading the upstream
// (upstream_flow_control_paused_reading_total); with a large limit it reads on into the buffer.
func TestStreamSendBufferPausesUpstreamReads(t *testing.T) {
	paused := func(window string) int64 {
		p := testPool(t, Config{}, knobs(t, "hcm.http2_protocol_options.initial_stream_window_size", window))
		pod := p.Pods()[0]
		rc := dialRaw(t, pod.Addr(), true) // the client's own stream window stays at 65535
		rc.headers(1, "GET", "/bytes/1048576", true)
		time.Sleep(500 * time.Millisecond) // not reading: the response fills the client's window
		if _, err := rc.read(10*time.Second, func(f frameInfo) bool { return f.end }); err != nil {
			t.Fatalf("window %s: response did not complete: %v", window, err)
		}
		return statValue(t, pod, "cluster."+ClusterHTTPBin+";.upstream_flow_control_paused_reading_total")
	}
	small, big := paused("65535"), paused("16777216")
	if small == 0 {
		t.Fatalf("a 64 KiB per-stream buffer never paused upstream reads while the client's window was closed")
	}
	if big != 0 {
		t.Fatalf("a 16 MiB per-stream buffer paused upstream reads %d times for a 1 MiB response", big)
	}
}
