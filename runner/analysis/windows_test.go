package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/stacks"
)

// The upload-window call checks the bandwidth-delay arithmetic: window/RTT per stream.
func TestUploadWindowCall(t *testing.T) {
	upload := func(window string, rttMs, rps float64) *Result {
		return ok("x", func(r *Result) {
			r.Streams, r.UploadBytes, r.ClientRTTMs, r.RPS = 8, 1<<20, rttMs, rps
			r.Knobs = []stacks.KnobValue{{Path: streamWindowKnob, Value: window}}
		})
	}
	// 64 KiB / 20 ms = 3.125 MiB/s per stream; 8 streams of 1 MiB uploads at 22 rps move
	// 2.75 MiB/s each (88%).
	for _, tc := range []struct {
		name           string
		control, small *Result
		verdict        string
		ratio          float64 // 0: none
		detail         string
	}{
		{"window-bound at 20 ms", upload("268435456", 20, 128), upload("65536", 20, 22), Pass, 0.88,
			"stream window 64 KiB, RTT 20 ms: window/RTT = 3.1 MiB/s per stream; measured 2.8 MiB/s per stream"},
		{"the large window moves no more", upload("268435456", 20, 24), upload("65536", 20, 22), Refuted, 0.88, "not window-bound"},
		{"far under window/RTT", upload("268435456", 20, 128), upload("65536", 20, 8), Refuted, 0.32, "not window-bound"},
		{"loopback", upload("268435456", 0, 190), upload("65536", 0, 405), Refuted, 0, "not window-bound at loopback"},
		{"no uploads", ok("c", func(*Result) {}), ok("s", func(*Result) {}), Inconclusive, 0, "upload nothing"},
	} {
		runs := map[string][]*Result{"c": {tc.control}, "s": {tc.small}}
		feeds := stacks.Feeds{"H-D upload": {"control": "c", "small-window": "s"}}
		v := byID(Evaluate(runs, 6, feeds))["H-D upload"]
		ratioOK := (tc.ratio == 0) == (v.Ratio == nil) && (v.Ratio == nil || math.Abs(*v.Ratio-tc.ratio) < 0.005)
		if v.Verdict != tc.verdict || !ratioOK || !strings.Contains(v.Detail, tc.detail) {
			t.Errorf("%s: %s ratio %v: %s", tc.name, v.Verdict, v.Ratio, v.Detail)
		}
	}
}

// 05-windows says why its downloads are not window-bound, at loopback and across a round trip.
func TestDownloadsNotWindowBoundText(t *testing.T) {
	if d := downloadsNotWindowBound(&Result{}); !strings.HasPrefix(d, "At loopback RTT") {
		t.Errorf("loopback: %s", d)
	}
	d := downloadsNotWindowBound(&Result{ClientRTTMs: 20})
	for _, want := range []string{"At an RTT of 20 ms these downloads are still not window-bound", "receive windows", "4 MiB per stream"} {
		if !strings.Contains(d, want) {
			t.Errorf("20 ms: %q missing from %s", want, d)
		}
	}
}

// The evaluation block says which Envoy defaults and round trip a run had, only when they
// differ from a default local run's.
func TestHeaderInForce(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		line string // "" for none
	}{
		{Header{EnvoyDefaults: "1.35"}, ""},
		{Header{}, ""},
		{Header{EnvoyDefaults: "1.36"}, "in force: Envoy 1.36 defaults (Istio 1.28)\n"},
		{Header{EnvoyDefaults: "1.35", ClientRTTMs: 20, UpstreamRTTMs: 20}, "in force: Envoy 1.35 defaults (Istio 1.27); round-trip time 20 ms clients-gateway, 20 ms gateway-upstreams\n"},
	} {
		var b strings.Builder
		WriteBlock(&b, tc.h, nil)
		got := ""
		if i := strings.Index(b.String(), "in force:"); i >= 0 {
			got = b.String()[i:]
			got = got[:strings.Index(got, "\n")+1]
		}
		if got != tc.line {
			t.Errorf("%+v: %q, want %q", tc.h, got, tc.line)
		}
	}
}
