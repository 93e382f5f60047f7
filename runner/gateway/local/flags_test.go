package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/stacks"
)

func parsePool(t *testing.T, args ...string) (*PoolFlags, error) {
	t.Helper()
	var p PoolFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	p.Register(fs)
	return &p, fs.Parse(args)
}

func TestRTTFlags(t *testing.T) {
	for _, tc := range []struct {
		args             []string
		client, upstream time.Duration
	}{
		{nil, 0, 0},
		{[]string{"--rtt", "20ms"}, 20 * time.Millisecond, 20 * time.Millisecond},
		{[]string{"--rtt", "20ms", "--upstream-rtt", "0"}, 20 * time.Millisecond, 0},
		{[]string{"--client-rtt", "5ms"}, 5 * time.Millisecond, 0},
		{[]string{"--rtt", "1s", "--client-rtt", "2ms"}, 2 * time.Millisecond, time.Second},
	} {
		p, err := parsePool(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Config()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.ClientRTT != tc.client || c.UpstreamRTT != tc.upstream {
			t.Errorf("%v: client %s upstream %s, want %s %s", tc.args, c.ClientRTT, c.UpstreamRTT, tc.client, tc.upstream)
		}
	}
}

func TestRTTFlagsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rtt", "-1ms"}, "--rtt -1ms: allowed 0..1s"},
		{[]string{"--rtt", "2s"}, "--rtt 2s: allowed 0..1s"},
		{[]string{"--client-rtt", "-5ms"}, "--client-rtt -5ms: allowed 0..1s"},
		{[]string{"--upstream-rtt", "1h"}, "--upstream-rtt 1h0m0s: allowed 0..1s"},
		{[]string{"--rtt", "twenty"}, `invalid argument "twenty" for "--rtt" flag`},
		{[]string{"--client-rtt", "20"}, `invalid argument "20" for "--client-rtt" flag`},
	} {
		p, err := parsePool(t, tc.args...)
		if err == nil {
			_, err = p.Config()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A run without --rtt is the run it was before the flag existed: no round-trip time, and only
// the drain-time departure.
func TestDefaultPoolHasNoRTT(t *testing.T) {
	p, err := parsePool(t)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientRTT != 0 || c.UpstreamRTT != 0 {
		t.Fatalf("default RTT %s / %s, want 0", c.ClientRTT, c.UpstreamRTT)
	}
	c.Pods, c.WaypointPods = 1, 0
	l, err := NewLocal(c)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Departures) != 1 || !strings.Contains(info.Departures[0].Field, "drain time") || info.ClientRTTMs != 0 || info.UpstreamRTTMs != 0 {
		t.Errorf("default info: departures %+v, rtt %v / %v ms", info.Departures, info.ClientRTTMs, info.UpstreamRTTMs)
	}

	c.ClientRTT, c.UpstreamRTT = 20*time.Millisecond, 0
	withRTT := Departures(c)
	if len(withRTT) != 2 || !strings.Contains(withRTT[1].Local, "20ms") || !strings.Contains(withRTT[1].Local, "10ms each way") {
		t.Errorf("with --client-rtt 20ms: departures %+v", withRTT)
	}
}

func TestEnvoyDefaultsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""}, {[]string{"--envoy-defaults", "1.36"}, ""}, {[]string{"--envoy-defaults", "1.39"}, ""},
		{[]string{"--envoy-defaults", "1.40"}, `--envoy-defaults "1.40": allowed 1.35 (Istio 1.27), 1.36 (Istio 1.28), 1.37 (Istio 1.29), 1.38 (Istio 1.30), 1.39 (Istio 1.31)`},
		{[]string{"--envoy-defaults", "1.39", "--http2-codec", "quiche"}, `--http2-codec "quiche": allowed oghttp2, nghttp2 (unset: Envoy 1.39's, nghttp2)`},
		{[]string{"--envoy-defaults", "1.36.2"}, `--envoy-defaults "1.36.2": allowed`},
		{[]string{"--envoy-defaults", ""}, `--envoy-defaults "": allowed`},
	} {
		p, err := parsePool(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Config()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestEnvoyReleaseChoosesTheCodec: unless --http2-codec says otherwise, the pods run the codec
// the --envoy-defaults release runs: oghttp2 in 1.35 and 1.36, nghttp2 from 1.37 (Istio 1.29).
func TestEnvoyReleaseChoosesTheCodec(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "oghttp2"}, {[]string{"--envoy-defaults", "1.36"}, "oghttp2"}, {[]string{"--envoy-defaults", "1.37"}, "nghttp2"},
		{[]string{"--envoy-defaults", "1.39"}, "nghttp2"}, {[]string{"--envoy-defaults", "1.39", "--http2-codec", "oghttp2"}, "oghttp2"},
	} {
		p, err := parsePool(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Config()
		if err != nil || c.Codec != tc.want {
			t.Errorf("%v: codec %q (%v), want %s", tc.args, c.Codec, err, tc.want)
		}
	}
}

// Under Envoy 1.36's defaults the local target runs, records and shows them: the knobs a
// scenario leaves unset take 1.36's values, the ones it sets keep theirs.
func TestEnvoy136DefaultsResolveAndShow(t *testing.T) {
	p, _ := parsePool(t, "--envoy-defaults", "1.36", "--pods", "1", "--waypoint-pods", "0")
	c, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(c)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	lab, _ := cat.MustGet("02-trigger")
	sc, _ := l.Resolve(lab)
	want := map[string]string{"max_concurrent_streams": "65536", "initial_stream_window_size": "16777216", "initial_connection_window_size": "25165824"}
	for _, kv := range sc.Knobs.Effective() {
		if w, ok := want[kv.Path[strings.LastIndex(kv.Path, ".")+1:]]; ok && kv.Value != w {
			t.Errorf("%s in force %s, want %s", kv.Path, kv.Value, w)
		}
	}
	info, _ := l.Info(context.Background())
	if info.EnvoyDefaults != "1.36" || len(info.Departures) != 2 || !strings.Contains(info.Departures[1].Local, "max_concurrent_streams 1024") {
		t.Errorf("info: envoy %q departures %+v", info.EnvoyDefaults, info.Departures)
	}
}

func TestMemoryFlags(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		limit, stream int64
	}{
		{nil, 1 << 30, 16 << 10},
		{[]string{"--memory-limit", "512Mi"}, 512 << 20, 16 << 10},
		{[]string{"--memory-limit", "none", "--stream-memory", "8Ki"}, -1, 8 << 10},
		{[]string{"--memory-limit", "2147483648"}, 2 << 30, 16 << 10},
	} {
		p, err := parsePool(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Config()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.MemoryLimit != tc.limit || c.StreamMemory != tc.stream {
			t.Errorf("%v: limit %d stream %d, want %d %d", tc.args, c.MemoryLimit, c.StreamMemory, tc.limit, tc.stream)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory-limit", "1G"}, `--memory-limit "1G": allowed 16Mi..1Ti, or none`},
		{[]string{"--memory-limit", "8Mi"}, `--memory-limit "8Mi": allowed 16Mi..1Ti, or none`},
		{[]string{"--memory-limit", "-1Gi"}, `--memory-limit "-1Gi": allowed 16Mi..1Ti, or none`},
		{[]string{"--stream-memory", "0"}, `--stream-memory "0": allowed 1Ki..16Mi`},
		{[]string{"--stream-memory", "32Mi"}, `--stream-memory "32Mi": allowed 1Ki..16Mi`},
	} {
		p, err := parsePool(t, tc.args...)
		if err == nil {
			_, err = p.Config()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
