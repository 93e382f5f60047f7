package cluster

import (
	"context"
	"strconv"

	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/stacks"
)

var _ gateway.Sized = (*Cluster)(nil)

// Size implements gateway.Sized: it sets igwlab:proxyConcurrency, igwlab:gatewayCpuLimit and
// igwlab:gatewayCpuRequest for the scenario's pulumi up, which Apply runs next (each back to
// the stack's own where the scenario sets none). They change the gateway's pod template (the
// proxy.istio.io/config annotation, the container's resources), so the Deployment rolls its
// pods, and the program's gateway check waits for every pod to run the workers it asked for.
func (c *Cluster) Size(ctx context.Context, s stacks.Size) error {
	ev := c.events()
	ev.ups.Wait()
	ev.upMu.Lock()
	defer ev.upMu.Unlock()
	keys := []struct {
		key, v string
	}{{configkey.ProxyConcurrency, ""}, {configkey.GatewayCPULimit, ""}, {configkey.GatewayCPURequest, ""}}
	if s.Concurrency > 0 {
		keys[0].v = strconv.Itoa(s.Concurrency)
	}
	if s.CPULimit > 0 {
		keys[1].v = s.CPULimit.String()
	}
	if s.CPURequest > 0 {
		keys[2].v = s.CPURequest.String()
	}
	for _, k := range keys {
		if err := c.hold(ctx, k.key, k.v); err != nil {
			return err
		}
	}
	return nil
}
