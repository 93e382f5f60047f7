package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/target"
	"github.com/igwlab/igwlab/stacks"
)

// inEffect reports whether a pod's /config_dump shows every knob the scenario sets, on the
// gateway listener whose HCM has the given stat prefix (any outbound one when prefix is "").
// It returns the knobs that are not (yet) in force.
func inEffect(dump []byte, k stacks.Knobs, prefix string) ([]string, error) {
	var doc struct {
		Configs []struct {
			Type      string `json:"@type"`
			Listeners []struct {
				Name   string `json:"name"`
				Active struct {
					Listener map[string]any `json:"listener"`
				} `json:"active_state"`
			} `json:"dynamic_listeners"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(dump, &doc); err != nil {
		return nil, fmt.Errorf("reading /config_dump: %w", err)
	}
	for _, c := range doc.Configs {
		for _, l := range c.Listeners {
			hcm := findHCM(l.Active.Listener)
			if hcm == nil {
				continue
			}
			sp, _ := hcm["stat_prefix"].(string)
			if (prefix != "" && sp != prefix) || (prefix == "" && !strings.HasPrefix(sp, "outbound_")) {
				continue
			}
			var missing []string
			for _, kv := range k.Set() {
				spec, _ := stacks.Lookup(kv.Path)
				want := kv.Value
				root := hcm
				path := strings.TrimPrefix(spec.Path, "hcm.")
				if rest, ok := strings.CutPrefix(spec.Path, "listener."); ok {
					root, path = l.Active.Listener, rest
				}
				got, ok := lookupPath(root, path)
				var dumped stacks.Knobs
				if !ok || spec.SetEnvoy(&dumped, got) != nil {
					missing = append(missing, fmt.Sprintf("%s=%s (dump: %v)", spec.Path, want, got))
				} else if v, _ := spec.Get(&dumped); v != want {
					missing = append(missing, fmt.Sprintf("%s=%s (dump: %v)", spec.Path, want, got))
				}
			}
			return missing, nil
		}
	}
	return nil, fmt.Errorf("no gateway listener with an HTTP connection manager in /config_dump")
}

func findHCM(l map[string]any) map[string]any {
	chains, _ := l["filter_chains"].([]any)
	for _, fc := range chains {
		fcm, _ := fc.(map[string]any)
		filters, _ := fcm["filters"].([]any)
		for _, f := range filters {
			fm, _ := f.(map[string]any)
			if fm["name"] == "envoy.filters.network.http_connection_manager" {
				tc, _ := fm["typed_config"].(map[string]any)
				return tc
			}
		}
	}
	return nil
}

func lookupPath(root map[string]any, path string) (any, bool) {
	var cur any = root
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// waitInEffect polls every gateway pod's /config_dump until the scenario's knobs show, so the
// measurement never credits a knob that has not reached the proxies.
func waitInEffect(ctx context.Context, t target.Target, pods []target.Pod, k stacks.Knobs, prefix string, timeout time.Duration) error {
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
