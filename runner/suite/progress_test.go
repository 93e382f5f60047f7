package suite

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/measure"
)

func TestProgressPlainAndLive(t *testing.T) {
	var plain bytes.Buffer
	p := newProgress(&plain, false, 0, []time.Duration{time.Second, time.Second})
	p.scenario(0, "02-trigger", "the trigger")
	p.step("load: h2dial for %s", "8s")
	p.sample(measure.Live{Connections: map[string]float64{"a": 1}, CV: 2.2}, []string{"a"})
	p.finish(0, "CV 2.236")
	got := plain.String()
	if strings.Contains(got, "\r") || !strings.Contains(got, "[1/2] 02-trigger: the trigger\n") ||
		!strings.Contains(got, "       load: h2dial for 8s\n") || strings.Contains(got, "CV 2.20") {
		t.Fatalf("plain progress:\n%q", got)
	}
	var tty bytes.Buffer
	p = newProgress(&tty, true, 0, []time.Duration{time.Second, time.Second})
	p.scenario(0, "02-trigger", "the trigger")
	p.sample(measure.Live{Connections: map[string]float64{"a": 1, "b": 0}, CV: 1.41, RPS: 2300}, []string{"a", "b"})
	got = tty.String()
	for _, want := range []string{"\r\033[K", "[1/2] 02-trigger", "ETA", "conns 1 0", "CV 1.41", "2300 rps", "░"} {
		if !strings.Contains(got, want) {
			t.Errorf("live line lacks %q:\n%q", want, got)
		}
	}
	var narrow bytes.Buffer
	p = newProgress(&narrow, true, 40, []time.Duration{time.Second})
	p.scenario(0, "07-waypoint-trigger", "through the waypoint")
	p.sample(measure.Live{Connections: map[string]float64{"a": 1, "b": 0}, CV: 1.41, RPS: 2300}, []string{"a", "b"})
	for _, l := range strings.Split(narrow.String(), "\r\033[K") {
		if !strings.Contains(l, "\n") && len([]rune(l)) > 39 { // a live line, redrawn in place
			t.Errorf("live line of %d columns on a 40-column terminal: %q", len([]rune(l)), l)
		}
	}
	var quiet *progress
	quiet.scenario(0, "x", "y") // a nil progress is silent
}
