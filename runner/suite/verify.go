package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// inEffect reports whether a pod's /config_dump shows every knob the scenario sets, on the
// gateway listener whose HCM has the given stat prefix (any outbound one when prefix is "").
// It returns the knobs that are not (yet) in force.
func inEffect(dump []byte, k stacks.Knobs, prefix string) ([]string, error) {
	dumped, err := stats.KnobsInForce(dump, prefix)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, kv := range k.Set() {
		spec, _ := stacks.Lookup(kv.Path)
		if got, set := spec.Get(&dumped); !set || got != kv.Value {
			shown := "<nil>"
			if set {
				shown = got
			}
			missing = append(missing, fmt.Sprintf("%s=%s (dump: %s)", kv.Path, kv.Value, shown))
		}
	}
	return missing, nil
}

// waitInEffect polls every gateway pod's /config_dump until the scenario's knobs show, so the
// measurement never credits a knob that has not reached the proxies.
func waitInEffect(ctx context.Context, t gateway.Target, pods []gateway.Pod, k stacks.Knobs, prefix string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pending []string
		for _, p := range pods {
			dump, err := t.Admin(ctx, p, "/config_dump")
			if err != nil {
				pending = append(pending, p.Name+": "+err.Error())
				continue
			}
			missing, err := inEffect(dump, k, prefix)
			if err != nil {
				pending = append(pending, p.Name+": "+err.Error())
			} else if len(missing) > 0 {
				pending = append(pending, p.Name+": "+strings.Join(missing, ", "))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("knobs not in effect after %s: %s", timeout, strings.Join(pending, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
