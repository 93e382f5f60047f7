package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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
	withRTT := departures(c)
	if len(withRTT) != 2 || !strings.Contains(withRTT[1].Local, "20ms") || !strings.Contains(withRTT[1].Local, "10ms each way") {
		t.Errorf("with --client-rtt 20ms: departures %+v", withRTT)
	}
}
