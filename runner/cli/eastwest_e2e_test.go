package cli

import (
	"testing"

	"github.com/igwlab/igwlab/runner/analysis"
)

// The east-west scenarios through the CLI on the local pool: two client pods, their
// connections tunnelled by their nodes' ztunnels to three waypoint pods; the calls that the
// pods' spread follows the client connections, that rotation on the waypoint moves it and that
// ztunnel's pool limit does not; and that four ztunnel threads carry what two could not.
func TestEastWestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end suite run of the east-west scenarios (about 40 s)")
	}
	sum, _ := runSuite(t, "--target", "local", "--seed", "1", "--only", "22-ew-pinned,22-ew-rotation,22-ew-pool,23-zt-2-threads,23-zt-4-threads")
	for _, id := range []string{"EW", "EW rotation", "EW pool", "ZT threads"} {
		if v := sum.Hypotheses[id]; v.Verdict != analysis.Confirmed {
			t.Errorf("%s: %s: %s", id, v.Verdict, v.Detail)
		}
	}
	pinned := sum.Scenarios["22-ew-pinned"]
	if pinned == nil || pinned.MeasuredTier != "waypoint" || pinned.Ztunnel == nil || pinned.Ztunnel.Tunnels != 2 {
		t.Fatalf("22-ew-pinned: %+v", pinned)
	}
	if z := sum.Scenarios["23-zt-4-threads"]; z == nil || z.MeasuredTier != "ztunnel" || z.Ztunnel == nil || z.Ztunnel.Threads != 4 {
		t.Errorf("23-zt-4-threads: %+v", z)
	}
}
