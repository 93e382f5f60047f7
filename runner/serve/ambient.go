package serve

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/stacks"
)

// writeAmbient prints the pool's ambient tiers: the waypoint pods' admins, the ztunnels'
// metrics, and for an east-west scenario where each client pod's traffic enters (its node's
// ztunnel captures what connects there), with the diagnose command that reads every tier.
func writeAmbient(ctx context.Context, w io.Writer, t *local.Local, sc stacks.Scenario) {
	wps, _ := t.Pods(ctx, gateway.Waypoint)
	if len(wps) == 0 {
		return
	}
	zts, _ := t.Pods(ctx, gateway.Ztunnel)
	var wpURLs, ztURLs []string
	for _, p := range wps {
		fmt.Fprintf(w, "  waypoint %s admin %s/stats/prometheus\n", p.Name, p.Admin)
		wpURLs = append(wpURLs, p.Admin)
	}
	for _, z := range zts {
		fmt.Fprintf(w, "  ztunnel %s metrics %s/metrics\n", z.Name, z.Admin)
		ztURLs = append(ztURLs, z.Admin+"/metrics")
	}
	if sc.EastWest == nil {
		return
	}
	pods, err := t.Pool.ClientPods(sc.EastWest.Clients)
	if err != nil {
		return
	}
	for _, cp := range pods {
		fmt.Fprintf(w, "client pod %s on %s (east-west, through the waypoint): http://%s\n", cp.Name, cp.Node, cp.Addr)
	}
	fmt.Fprintf(w, "tiers: igwlab diagnose --waypoint-admin %s --ztunnel %s\n", strings.Join(wpURLs, ","), strings.Join(ztURLs, ","))
}
