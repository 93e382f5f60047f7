package sweep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

func TestParseStreams(t *testing.T) {
	for _, tc := range []struct {
		text, want, err string
	}{
		{"500, 1100,2100", "500 1100 2100", ""},
		{"100..10000x10", "100 1000 10000", ""},
		{"0,500", "", "0 is out of range: allowed 1..100000 streams"},
		{"500,100001", "", "100001 is out of range"},
		{"500,500", "", "500 is listed twice"},
		{"five", "", `"five" is not a whole number`},
		{"10..1x2", "", "hi 1 is below lo 10"},
		{"", "", "no values"},
	} {
		got, err := ParseStreams(tc.text)
		switch {
		case tc.err == "" && (err != nil || strings.Join(got, " ") != tc.want):
			t.Errorf("%q: %v %v, want %s", tc.text, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), StreamsAxis)):
			t.Errorf("%q: error %v, want one naming %s and saying %q", tc.text, err, StreamsAxis, tc.err)
		}
	}
}

func TestCheckStreams(t *testing.T) {
	for name, ok := range map[string]bool{"02-trigger": true, "14-upload-window": true, "04-fortio": false, "01-baseline": false, "12-grpc-variant": false} {
		if err := CheckStreams(testutil.Scenario(t, name)); (err == nil) != ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSpreadNamesTheCapInForce: the cap comes from --set, the scenario, or the Envoy
// release's default; the first value with more than one connection is where it spreads.
func TestSpreadNamesTheCapInForce(t *testing.T) {
	pts := func(conns ...float64) []*Point {
		var out []*Point
		for i, c := range conns {
			out = append(out, &Point{Value: []string{"500", "1100", "2100"}[i], Status: analysis.StatusOK,
				Numbers: Numbers{Connections: c, CV: 1, ChanceVerdict: "within chance", Chance: &analysis.Band{}}})
		}
		return out
	}
	var cap1024 stacks.Knobs
	if _, err := stacks.ParseKnobSetting(&cap1024, "hcm.http2_protocol_options.max_concurrent_streams=1024"); err != nil {
		t.Fatal(err)
	}
	trigger, upload := testutil.Scenario(t, "02-trigger"), testutil.Scenario(t, "14-upload-window")
	r136, _ := stacks.LookupEnvoy("1.36")
	effUpload := upload.WithLocal()
	effUpload.Knobs = effUpload.Knobs.WithDefaults(r136)
	effTrigger := trigger.WithLocal()
	effHeld := trigger.WithKnobs(cap1024).WithLocal()
	for _, tc := range []struct {
		name   string
		o      Options
		eff    stacks.Scenario
		envoy  string
		conns  []float64
		cap    uint32
		source string
		at     string
	}{
		{"the upgrade alone", Options{Scenario: upload}, effUpload, "1.36", []float64{1, 2, 3}, 1024, "Envoy 1.36's default", "1100"},
		{"the scenario's own cap", Options{Scenario: trigger}, effTrigger, "1.36", []float64{1, 1, 1}, 65536, "set by 02-trigger", ""},
		{"held by --set", Options{Scenario: trigger, Set: cap1024}, effHeld, "1.35", []float64{1, 2, 3}, 1024, "held by --set", "1100"},
		{"Envoy 1.35's default", Options{Scenario: upload}, upload.WithLocal(), "1.35", []float64{1, 1, 1}, 2147483647, "Envoy 1.35's default", ""},
	} {
		sp := spreadOf(&Sweep{Points: pts(tc.conns...)}, tc.o, &tc.eff, tc.envoy)
		if sp.Cap != tc.cap || !strings.Contains(sp.CapSource, tc.source) || sp.At != tc.at {
			t.Errorf("%s: cap %d (%s), spreads at %q; want %d (%s), %q", tc.name, sp.Cap, sp.CapSource, sp.At, tc.cap, tc.source, tc.at)
		}
		if tc.at == "" && !strings.Contains(sp.Text, "one connection at every value") || tc.at != "" && !strings.Contains(sp.Text, "starts to spread at "+tc.at) {
			t.Errorf("%s: %s", tc.name, sp.Text)
		}
	}
}

// TestStreamsSweepFindsWhereTheClientSpreads runs the sweep on the emulated pool under Envoy
// 1.36's defaults: 02-trigger's client with the cap at 1024 holds one connection at 500
// streams and dials more at 1100.
func TestStreamsSweepFindsWhereTheClientSpreads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local pool for about twenty seconds")
	}
	l, err := local.NewLocal(emulator.Config{Pods: 6, Workers: 1, ListenerDrainTime: local.LocalDrainTime, Envoy: "1.36"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var k stacks.Knobs
	if _, err := stacks.ParseKnobSetting(&k, "hcm.http2_protocol_options.max_concurrent_streams=1024"); err != nil {
		t.Fatal(err)
	}
	sw, err := Run(context.Background(), Options{Target: l, Scenario: testutil.Scenario(t, "02-trigger"), Streams: true, Set: k,
		Values: []string{"500", "1100"}, Duration: 2 * time.Second, RunSettings: suite.RunSettings{OutDir: t.TempDir(), NoReport: true}})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Knob != StreamsAxis || sw.Recommendation != nil || sw.Spread == nil || len(sw.Set) != 1 {
		t.Fatalf("sweep %+v", sw)
	}
	lo, hi := sw.Points[0], sw.Points[1]
	if lo.Status != analysis.StatusOK || hi.Status != analysis.StatusOK || lo.Connections != 1 || hi.Connections < 2 {
		t.Fatalf("500 streams: %s %v connections; 1100: %s %v connections", lo.Status, lo.Connections, hi.Status, hi.Connections)
	}
	if sw.Spread.At != "1100" || sw.Spread.Cap != 1024 || sw.Spread.CapSource != "held by --set" {
		t.Errorf("spread %+v", sw.Spread)
	}
}

// TestStreamsSweepOnTheRealLab: on a real lab each value runs the in-cluster h2dial with that
// many streams, and --set reaches the stack as igwlab:knobs.
func TestStreamsSweepOnTheRealLab(t *testing.T) {
	k := gatewaytest.NewKube(6, 1)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: 10 * time.Second})
	var held stacks.Knobs
	if _, err := stacks.ParseKnobSetting(&held, "hcm.http2_protocol_options.max_concurrent_streams=1024"); err != nil {
		t.Fatal(err)
	}
	sw, err := Run(context.Background(), Options{Target: c, Scenario: testutil.Scenario(t, "02-trigger"), Streams: true, Set: held,
		Values: []string{"500", "1100"}, Duration: time.Second, RunSettings: suite.RunSettings{OutDir: t.TempDir(), ApplyTimeout: 5 * time.Second, NoReport: true}})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, e := range k.Execs {
		if cmd := strings.Join(e, " "); strings.Contains(cmd, "-mode shared") && strings.Contains(cmd, "-duration 1s") { // the measured run, not the warm-up
			runs = append(runs, cmd)
		}
	}
	if len(runs) != 2 || !strings.Contains(runs[0], "-c 500 ") || !strings.Contains(runs[1], "-c 1100 ") {
		t.Errorf("load runs %q", runs)
	}
	if got := st.Config[configkey.Full(configkey.Knobs)]; got != `{"hcm.http2_protocol_options.max_concurrent_streams":"1024"}` {
		t.Errorf("igwlab:knobs %q", got)
	}
	if sw.Spread == nil || sw.Spread.Cap != 1024 {
		t.Errorf("spread %+v", sw.Spread)
	}
}
