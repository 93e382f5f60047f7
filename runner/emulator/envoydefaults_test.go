package emulator

import (
	"context"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/stacks"
)

// The pods advertise the defaults of the Envoy release they run for knobs a scenario leaves
// unset, and a knob the scenario sets wins.
func TestEnvoyReleaseDefaultsAreAdvertised(t *testing.T) {
	for _, tc := range []struct {
		envoy            string
		k                stacks.Knobs
		streams, window  uint32
		connWindowUpdate uint32
	}{
		{"", stacks.Knobs{}, 2147483647, 268435456, 268435456 - 65535},
		{"1.35", stacks.Knobs{}, 2147483647, 268435456, 268435456 - 65535},
		{"1.36", stacks.Knobs{}, 1024, 16777216, 25165824 - 65535},
		{"1.36", knobs(t, "hcm.http2_protocol_options.max_concurrent_streams", "65536"), 65536, 16777216, 25165824 - 65535},
		{"1.39", stacks.Knobs{}, 1024, 16777216, 25165824 - 65535},
	} {
		p := testPool(t, Config{Envoy: tc.envoy}, tc.k)
		rc := dialRaw(t, p.Pods()[0].Addr(), true)
		if got := rc.settings[http2.SettingMaxConcurrentStreams]; got != tc.streams {
			t.Errorf("Envoy %q %s: SETTINGS_MAX_CONCURRENT_STREAMS %d, want %d", tc.envoy, tc.k.Short(), got, tc.streams)
		}
		if got := rc.settings[http2.SettingInitialWindowSize]; got != tc.window {
			t.Errorf("Envoy %q: SETTINGS_INITIAL_WINDOW_SIZE %d, want %d", tc.envoy, got, tc.window)
		}
		wu := rc.connWU
		if wu == 0 {
			frames, err := rc.read(time.Second, func(f frameInfo) bool { return f.typ == http2.FrameWindowUpdate && f.stream == 0 })
			if err != nil {
				t.Fatalf("Envoy %q: no connection WINDOW_UPDATE: %v", tc.envoy, err)
			}
			wu = frames[len(frames)-1].increment
		}
		if wu != tc.connWindowUpdate {
			t.Errorf("Envoy %q: connection WINDOW_UPDATE %d, want %d", tc.envoy, wu, tc.connWindowUpdate)
		}
		rc.c.Close()
	}
	if _, err := Start(Config{Pods: 1, Workers: 1, Envoy: "1.40"}); err == nil {
		t.Error("Envoy 1.40, a release the lab does not model, started a pool")
	}
}

// Under Envoy 1.36's defaults a client that shares one transport keeps one connection for 500
// streams (as 02-trigger runs) and starts dialing once its streams pass the 1024 cap.
func TestDialingClientSpreadsPastTheEnvoy136StreamCap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1100 streams")
	}
	p := testPool(t, Config{Envoy: "1.36"}, stacks.Knobs{})
	for _, tc := range []struct {
		streams  int
		min, max int
	}{{500, 1, 1}, {1100, 2, 100}} {
		res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.Pods()[0].Addr() + "/delay/0.2",
			Mode: h2dial.Shared, Concurrency: tc.streams, Duration: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.ConnectionsOpened < tc.min || res.ConnectionsOpened > tc.max {
			t.Errorf("%d streams under a 1024 cap: %d connections, want %d..%d", tc.streams, res.ConnectionsOpened, tc.min, tc.max)
		}
	}
}
