package diagnose

import (
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// Streams in flight are a gauge: a client whose calls were caught between answers at the
// window's end still reads as multiplexing when the start's reading saw them in flight.
func TestStreamsInFlightReadsBothEnds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pre, post        float64
		preRead, restart bool
		want             float64
		client           string
	}{
		{"caught between answers at the end", 50, 0, true, false, 25, "grpc"},
		{"in flight at both ends", 48, 52, true, false, 50, "grpc"},
		{"one stream a connection", 1, 1, true, false, 1, "h2dial"},
		{"no reading at the start", 0, 50, false, false, 50, "grpc"},
		{"restarted in the window: the start's reading was another process's", 50, 0, true, true, 0, "h2dial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PodWindow{Name: "gw-a", Workers: 2, PreRead: tc.preRead, Restarted: tc.restart,
				Pre:   stats.Pod{Name: "gw-a", CxActive: 1, RqActive: tc.pre},
				Post:  stats.Pod{Name: "gw-a", CxActive: 1, RqTotal: 5000, RqActive: tc.post, Uptime: 600},
				Delta: stats.Pod{Name: "gw-a", RqTotal: 5000}}
			w := &Window{Span: 30 * time.Second, Pods: []PodWindow{p}, Names: stats.Names{HCMPrefix: "outbound_0.0.0.0_80", Listener: "0.0.0.0_80"}}
			r := Judge(w)
			if r.StreamsPerConn != tc.want {
				t.Errorf("streams in flight per connection %.1f, want %.1f", r.StreamsPerConn, tc.want)
			}
			if g := GuessClient(w, r); g.Client.Kind != tc.client {
				t.Errorf("client %s (%s), want %s", g.Client.Kind, g.Shape, tc.client)
			}
		})
	}
}
