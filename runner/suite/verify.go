package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/stacks"
)

// waitInEffect polls every gateway pod's /config_dump until the scenario's knobs show, so the
// measurement never credits a knob that has not reached the proxies.
func waitInEffect(ctx context.Context, t gateway.Target, pods []gateway.Pod, role string, k stacks.Knobs, prefix string, timeout time.Duration) error {
	if len(pods) == 0 {
		return nil
	}
	_, err := inforce.Wait(ctx, gateway.AdminPool{Target: t, Role: role, Fixed: pods},
		inforce.Want{Knobs: k, Prefix: prefix, Pods: len(pods)}, timeout)
	if err != nil {
		return fmt.Errorf("knobs not in effect: %w", err)
	}
	return nil
}
