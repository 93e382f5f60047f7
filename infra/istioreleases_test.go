package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// TestEnvoyFiltersAreReadAgainstTheLabsIstio keeps the release a user's EnvoyFilter's
// proxyVersion is checked against the one the lab installs by default.
func TestEnvoyFiltersAreReadAgainstTheLabsIstio(t *testing.T) {
	if envoyfilter.DefaultTarget.Istio != DefaultIstio {
		t.Errorf("envoyfilter.DefaultTarget.Istio = %s, the lab installs %s", envoyfilter.DefaultTarget.Istio, DefaultIstio)
	}
	// The waypoint's filter names the waypoint the program deploys, in its namespace.
	if w := envoyfilter.DefaultWaypoint; w.Namespace != BackendNamespace || w.Gateway != WaypointName {
		t.Errorf("envoyfilter.DefaultWaypoint = %+v, the program's waypoint is %s/%s", w, BackendNamespace, WaypointName)
	}
}

// TestDocsListTheIstioReleases keeps the real lab's table of Istio releases equal to the ones
// the program installs, with each one's Envoy, codec, HTTP/2 defaults, Gateway API and
// Kubernetes range.
func TestDocsListTheIstioReleases(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "real-lab.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	mib := func(v string) string {
		var n int64
		fmt.Sscan(v, &n)
		return fmt.Sprintf("%d MiB", n>>20)
	}
	for _, r := range IstioReleases {
		e := stacks.EnvoyForIstio(r.Minor + ".0")
		h2 := "hcm.http2_protocol_options."
		status := "until six weeks after"
		switch {
		case r.EOL != "":
			status = "out of support since " + r.EOL
		case r.Proven != "":
			status = "supported; proven here (" + r.Proven + ")"
		}
		row := fmt.Sprintf("| %s | %s | %s | %s, %s / %s | %s | 1.%d-1.%d | %s", r.Minor, e.Envoy, e.Codec,
			e.Defaults[h2+"max_concurrent_streams"], mib(e.Defaults[h2+"initial_stream_window_size"]), mib(e.Defaults[h2+"initial_connection_window_size"]),
			r.GatewayAPI, r.K8sMin, r.K8sMax, status)
		if !strings.Contains(page, row) {
			t.Errorf("docs/real-lab.md lacks the row %q", row)
		}
	}
	if n := strings.Count(page, "\n| 1."); n != len(IstioReleases) {
		t.Errorf("docs/real-lab.md's table has %d Istio rows, the program installs %d minors", n, len(IstioReleases))
	}
}
