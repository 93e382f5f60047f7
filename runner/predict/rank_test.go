package predict

import (
	"testing"

	"github.com/igwlab/igwlab/runner/sweep"
)

func row(label string, p99, rps, busy, drains float64) *Row {
	return &Row{Lever: Lever{Label: label}, Ran: true, Numbers: sweep.Numbers{P99Ms: p99, RPS: rps, BusyMax: busy, DrainsPerS: drains}}
}

// TestBetter: p99 decides beyond 25%; then, for a closed-loop client only, requests a second
// beyond 10%; then the hottest worker beyond 5 points; then the reconnect cost. A lever that
// did not run ranks last.
func TestBetter(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b       *Row
		closedLoop bool
		want       bool
	}{
		{"tail first", row("a", 30, 100, 1, 5), row("b", 45, 200, 0.2, 0), false, true},
		{"tail within 25%, then busy", row("a", 40, 100, 0.5, 5), row("b", 45, 100, 1, 0), false, true},
		{"closed loop: more requests at the same tail", row("a", 17.2, 9943, 1, 0.1), row("b", 16.9, 7456, 1, 0), true, true},
		{"open loop: requests do not count", row("a", 17.2, 9943, 1, 0.1), row("b", 16.9, 7456, 1, 0), false, false},
		{"closed loop: within 10% falls to busy", row("a", 17, 1000, 0.5, 0), row("b", 17, 1050, 0.9, 0), true, true},
		{"same numbers, cheaper wins", row("a", 17, 1000, 0.5, 0), row("b", 17, 1000, 0.5, 1), false, true},
		{"not run ranks last", &Row{Lever: Lever{Label: "a"}}, row("b", 999, 1, 1, 9), false, false},
	} {
		if got := better(c.a, c.b, c.closedLoop); got != c.want {
			t.Errorf("%s: better = %v, want %v", c.name, got, c.want)
		}
	}
}
