package analysis

import (
	"fmt"
	"math"
	"strconv"
)

// A stream moves at most one window per round trip: the sender spends its window, and the
// receiver's WINDOW_UPDATE for those bytes arrives one round trip after they left. The HCM's
// initial_stream_window_size is the gateway's receive window, so it bounds what clients
// upload through it, at window/RTT per stream.

const streamWindowKnob = "hcm.http2_protocol_options.initial_stream_window_size"

// uploadWindowCall checks the bandwidth-delay arithmetic on an upload through a small stream
// window against a control with a large one: the upload is window-bound when each stream moves
// within 25% of window/RTT and the large window moves clearly more.
func uploadWindowCall(get lookup, _ int) (string, float64, string, nums, string) {
	c, s := get("control"), get("small-window")
	w, wc := knobBytes(s, streamWindowKnob), knobBytes(c, streamWindowKnob)
	per, perC := perStream(s), perStream(c)
	rtt := s.ClientRTTMs / 1000
	bound := math.Inf(1)
	if rtt > 0 {
		bound = w / rtt
	}
	ratio := per / bound
	gain := ratioOf(perC, per)
	n := nums{"window_bytes": w, "control_window_bytes": wc, "rtt_ms": s.ClientRTTMs, "window_per_rtt_bytes_s": bound,
		"per_stream_bytes_s": per, "control_per_stream_bytes_s": perC, "streams": float64(s.Streams), "upload_bytes": float64(s.UploadBytes)}
	arithmetic := fmt.Sprintf("%d streams each uploading %s per request at %.1f rps", s.Streams, mib(float64(s.UploadBytes)), s.RPS)
	if s.UploadBytes == 0 || c.UploadBytes == 0 {
		return Inconclusive, math.NaN(), "", n, "the scenarios in these roles upload nothing (client.body_bytes): there is no upload to bound"
	}
	if rtt == 0 {
		return Refuted, math.NaN(), "", n, fmt.Sprintf(
			"not window-bound at loopback: with no added round trip (no --rtt) a %s window refills in microseconds, so window/RTT is far above anything a worker moves; %s: %s/s per stream with the %s window vs %s/s with the control's %s (%.2fx): a larger window buys no upload rate here. Rerun with --rtt 20ms to see the window bound it",
			mib(w), arithmetic, mib(per), mib(w), mib(perC), mib(wc), gain)
	}
	v := Refuted
	verdictText := "not window-bound: something else (the worker, the upstream) moves less than the window allows"
	if ratio >= 0.75 && ratio <= 1.25 && gain >= 1.5 {
		v = Pass
		verdictText = "window-bound: each stream moves one window per round trip, and the knob sets the upload rate"
	}
	return v, ratio, "per-stream throughput / (window/RTT)", n, fmt.Sprintf(
		"stream window %s, RTT %g ms: window/RTT = %s/s per stream; measured %s/s per stream (%s) = %.0f%% of it; the control's %s window moves %s/s per stream (%.2fx); %s",
		mib(w), s.ClientRTTMs, mib(bound), mib(per), arithmetic, 100*ratio, mib(wc), mib(perC), gain, verdictText)
}

// downloadsNotWindowBound says why 05-windows' downloads do not feel the HCM windows, at
// loopback or across a round trip.
func downloadsNotWindowBound(r *Result) string {
	why := "the HCM windows are the gateway's receive windows: they govern what clients upload and what the gateway buffers per stream, not how fast responses flow (responses are sent within the client's receive window: h2dial's Go transport opens 4 MiB per stream and 1 GiB per connection; the gateway-upstream hop has the cluster's own HTTP/2 options)"
	if r.ClientRTTMs == 0 {
		return "At loopback RTT a window refills at once, and " + why
	}
	return fmt.Sprintf("At an RTT of %g ms these downloads are still not window-bound: %s, and a response smaller than those windows leaves in one round trip. An upload through a small window is (H-D upload)", r.ClientRTTMs, why)
}

// perStream is the bytes each stream uploads per second: every stream is busy for the whole
// window, one request after another.
func perStream(r *Result) float64 {
	if r.Streams == 0 {
		return 0
	}
	return r.RPS * float64(r.UploadBytes) / float64(r.Streams)
}

// knobBytes is a knob's value in force in a run, as a number (0 when it is not one).
func knobBytes(r *Result, path string) float64 {
	for _, k := range r.Knobs {
		if k.Path == path {
			v, _ := strconv.ParseFloat(k.Value, 64)
			return v
		}
	}
	return 0
}

// mib writes bytes in KiB or MiB.
func mib(b float64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.0f KiB", b/1024)
	}
	return fmt.Sprintf("%.1f MiB", b/(1<<20))
}
