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

// stallFirst keeps the pod's worker busy for a few seconds, so the requests that follow are
// not served, and nothing reads their bodies, while a test looks at the windows.
func stallFirst(t *testing.T, p *Pool) {
	t.Helper()
	if err := p.StallWorker(0, 0, 4*time.Second); err != nil {
		t.Fatal(err)
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

// A stream's data is given back (WINDOW_UPDATE) as it arrives until the stream's buffer is
// over initial_stream_window_size; then the window is withheld, and a client that sends past
// it gets RST_STREAM FLOW_CONTROL_ERROR, a stream error: the connection lives on.
func TestStreamWindowAndBufferLimit(t *testing.T) {
	p := testPool(t, Config{}, knobs(t,
		"hcm.http2_protocol_options.initial_stream_window_size", "65535",
		"hcm.http2_protocol_options.initial_connection_window_size", "1048576"))
	pod := p.Pods()[0]
	rc := dialRaw(t, pod.Addr(), true)
	stallFirst(t, p)
	rc.headers(1, "POST", "/anything", false)
	rc.sendBody(1, 65535) // fits the buffer: handed back at once
	frames, err := rc.read(time.Second, nil)
	if !isTimeout(err) {
		t.Fatalf("reading: %v", err)
	}
	if got := windowUpdates(frames)[1]; got != 65535 {
		t.Fatalf("stream WINDOW_UPDATEs for the first 65535 bytes sum to %d, want 65535 (data under the buffer limit is given back on arrival)", got)
	}
	rc.sendBody(1, 65535) // the buffer is over its limit from the first byte: nothing comes back
	frames, err = rc.read(500*time.Millisecond, nil)
	if !isTimeout(err) {
		t.Fatalf("reading: %v", err)
	}
	if got := windowUpdates(frames)[1]; got != 0 {
		t.Fatalf("stream WINDOW_UPDATE of %d while its buffer is over the limit", got)
	}
	rc.sendBody(1, 1) // past the stream's window
	frames, err = rc.read(time.Second, func(f frameInfo) bool { return f.typ == http2.FrameRSTStream })
	if err != nil || frames[len(frames)-1].code != http2.ErrCodeFlowControl || frames[len(frames)-1].stream != 1 {
		t.Fatalf("sending past the stream window: %v %+v, want RST_STREAM FLOW_CONTROL_ERROR on stream 1", err, frames)
	}
	for stat, want := range map[string]int64{
		hcmName(pod, "downstream_cx_protocol_error"): 0,
		hcmName(pod, "downstream_cx_active"):         1,
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
	stallFirst(t, p)
	rc.headers(1, "POST", "/anything", false)
	rc.headers(3, "POST", "/anything", false)
	// 65535 bytes come back at once, the next 65535 are held in stream 1's buffer: the
	// connection window is then exactly spent, and one byte on stream 3 is past it.
	rc.sendBody(1, 65535)
	if _, err := rc.read(500*time.Millisecond, nil); !isTimeout(err) {
		t.Fatalf("reading: %v", err)
	}
	rc.sendBody(1, 65535)
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
