package stats

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/stacks"
)

// HCMFilter is the name of Envoy's HTTP connection manager network filter.
const HCMFilter = "envoy.filters.network.http_connection_manager"

// GatewayListener finds, in an Envoy admin's /config_dump, the active listener whose HTTP
// connection manager has the stat prefix (any outbound_ one when prefix is ""), and returns
// the listener and its connection manager's typed_config as decoded JSON.
func GatewayListener(dump []byte, prefix string) (listener, hcm map[string]any, err error) {
	var doc struct {
		Configs []struct {
			Listeners []struct {
				Active struct {
					Listener map[string]any `json:"listener"`
				} `json:"active_state"`
			} `json:"dynamic_listeners"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(dump, &doc); err != nil {
		return nil, nil, fmt.Errorf("reading /config_dump: %w", err)
	}
	for _, c := range doc.Configs {
		for _, l := range c.Listeners {
			hcm := listenerHCM(l.Active.Listener)
			if hcm == nil {
				continue
			}
			sp, _ := hcm["stat_prefix"].(string)
			if (prefix != "" && sp != prefix) || (prefix == "" && !strings.HasPrefix(sp, "outbound_")) {
				continue
			}
			return l.Active.Listener, hcm, nil
		}
	}
	return nil, nil, fmt.Errorf("/config_dump has no gateway listener with an HTTP connection manager (stat prefix %q)", prefix)
}

func listenerHCM(l map[string]any) map[string]any {
	chains, _ := l["filter_chains"].([]any)
	for _, fc := range chains {
		fcm, _ := fc.(map[string]any)
		filters, _ := fcm["filters"].([]any)
		for _, f := range filters {
			if fm, _ := f.(map[string]any); fm["name"] == HCMFilter {
				tc, _ := fm["typed_config"].(map[string]any)
				return tc
			}
		}
	}
	return nil
}

// KnobsInForce reads the knobs of the registry that a /config_dump shows on the gateway
// listener (see GatewayListener). Fields that are not knobs are left alone (a real dump has
// many), and so is a knob whose value the registry does not take: the caller sees it unset.
func KnobsInForce(dump []byte, prefix string) (stacks.Knobs, error) {
	var k stacks.Knobs
	listener, hcm, err := GatewayListener(dump, prefix)
	if err != nil {
		return k, err
	}
	for _, spec := range stacks.Registry {
		root, path := hcm, strings.TrimPrefix(spec.Path, "hcm.")
		if rest, ok := strings.CutPrefix(spec.Path, "listener."); ok {
			root, path = listener, rest
		}
		if v, ok := lookupPath(root, path); ok {
			_ = spec.SetEnvoy(&k, v)
		}
	}
	return k, nil
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

// MissingKnobs reports the knobs of k that a pod's /config_dump does not show (yet) on the
// gateway listener whose connection manager has the stat prefix (see GatewayListener), each
// as "path=want (dump: got)", with <nil> for a field the dump does not have at all.
func MissingKnobs(dump []byte, k stacks.Knobs, prefix string) ([]string, error) {
	dumped, err := KnobsInForce(dump, prefix)
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

// PushInForce is the config push generation the gateway listener's connection manager
// carries in /config_dump (stacks.PushTag), 0 when it carries none.
func PushInForce(dump []byte, prefix string) (int, error) {
	_, hcm, err := GatewayListener(dump, prefix)
	if err != nil {
		return 0, err
	}
	n, _, err := stacks.PushGeneration(hcm["tracing"])
	if err != nil {
		return 0, fmt.Errorf("/config_dump: %w", err)
	}
	return n, nil
}
