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
// the listener and its connection manager's typed_config as decoded JSON. Listeners from xDS
// (dynamic_listeners, as Istio's) and from the bootstrap (static_listeners, as a plain
// Envoy's) are both read (envoy.admin.v3.ListenersConfigDump).
func GatewayListener(dump []byte, prefix string) (listener, hcm map[string]any, err error) {
	var doc struct {
		Configs []struct {
			Listeners []struct {
				Active struct {
					Listener map[string]any `json:"listener"`
				} `json:"active_state"`
			} `json:"dynamic_listeners"`
			Static []struct {
				Listener map[string]any `json:"listener"`
			} `json:"static_listeners"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(dump, &doc); err != nil {
		return nil, nil, fmt.Errorf("reading /config_dump: %w", err)
	}
	var all []map[string]any
	for _, c := range doc.Configs {
		for _, l := range c.Listeners {
			all = append(all, l.Active.Listener)
		}
		for _, l := range c.Static {
			all = append(all, l.Listener)
		}
	}
	for _, l := range all {
		hcm := listenerHCM(l)
		if hcm == nil {
			continue
		}
		sp, _ := hcm["stat_prefix"].(string)
		if (prefix != "" && sp != prefix) || (prefix == "" && !strings.HasPrefix(sp, "outbound_")) {
			continue
		}
		return l, hcm, nil
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
// as "path=want (dump: got)". A field the dump leaves out runs at its default (ReadInForce):
// a knob asked for at its default is in force without it.
func MissingKnobs(dump []byte, k stacks.Knobs, prefix string) ([]string, error) {
	c, err := ReadInForce(dump, prefix)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, kv := range k.Set() {
		got := c.Knob(kv.Path)
		if got.Value != kv.Value {
			shown := got.Value
			if !got.Set {
				shown = "not set, so " + got.Value
			}
			missing = append(missing, fmt.Sprintf("%s=%s (dump: %s)", kv.Path, kv.Value, shown))
		}
	}
	return missing, nil
}

// ConfigInForce is what a pod's /config_dump says its gateway listener runs with: every knob
// of the registry, set or at the default of the pod's Envoy release.
type ConfigInForce struct {
	// Envoy is the version the bootstrap reports (node.user_agent_build_version: "1.28.8"),
	// "" where the dump has none; Release is the modelled release whose defaults apply.
	Envoy   string              `json:"envoy,omitempty"`
	Release stacks.EnvoyRelease `json:"-"`
	Set     stacks.Knobs        `json:"-"`
	Knobs   []KnobInForce       `json:"knobs"`
}

// KnobInForce is one knob in force: the value the dump sets, or its default.
type KnobInForce struct {
	Path  string `json:"path"`
	Value string `json:"value"`
	Set   bool   `json:"set"`
}

// Knob returns the knob at path (its zero value for a path that is no knob).
func (c ConfigInForce) Knob(path string) KnobInForce {
	for _, k := range c.Knobs {
		if k.Path == path {
			return k
		}
	}
	return KnobInForce{Path: path}
}

// ReadInForce reads every knob in force on the gateway listener from a /config_dump: those it
// sets, and for the rest the default of the Envoy release its bootstrap names (stacks.ReleaseFor;
// the lab's own release where it names none). A dump that sets no HTTP/2 option, as Istio's
// gateways run by default, reads as all defaults.
func ReadInForce(dump []byte, prefix string) (ConfigInForce, error) {
	set, err := KnobsInForce(dump, prefix)
	if err != nil {
		return ConfigInForce{}, err
	}
	c := ConfigInForce{Envoy: EnvoyVersion(dump), Set: set}
	c.Release = stacks.ReleaseFor(c.Envoy)
	for _, spec := range stacks.Registry {
		k := KnobInForce{Path: spec.Path}
		k.Value, k.Set = spec.Get(&set)
		if !k.Set {
			k.Value = spec.Default
			if v, ok := c.Release.Defaults[spec.Path]; ok {
				k.Value = v
			}
		}
		c.Knobs = append(c.Knobs, k)
	}
	return c, nil
}

// EnvoyVersion is the Envoy version a /config_dump's bootstrap reports
// (envoy.config.core.v3.Node.user_agent_build_version), "" where it reports none.
func EnvoyVersion(dump []byte) string {
	var doc struct {
		Configs []struct {
			Bootstrap struct {
				Node struct {
					Build struct {
						Version *struct {
							Major int `json:"major_number"`
							Minor int `json:"minor_number"`
							Patch int `json:"patch"`
						} `json:"version"`
					} `json:"user_agent_build_version"`
				} `json:"node"`
			} `json:"bootstrap"`
		} `json:"configs"`
	}
	if json.Unmarshal(dump, &doc) != nil {
		return ""
	}
	for _, c := range doc.Configs {
		if v := c.Bootstrap.Node.Build.Version; v != nil {
			return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
		}
	}
	return ""
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
