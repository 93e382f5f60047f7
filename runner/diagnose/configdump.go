package diagnose

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// inForce reads the rotation and caps from a /config_dump: the listener whose connection
// manager has the gateway's stat prefix (any outbound_ one when prefix is empty).
func inForce(dump []byte, prefix string) (*InForce, error) {
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
		return nil, fmt.Errorf("reading /config_dump: %w", err)
	}
	for _, c := range doc.Configs {
		for _, l := range c.Listeners {
			hcm := listenerHCM(l.Active.Listener)
			sp, _ := hcm["stat_prefix"].(string)
			if hcm == nil || (prefix != "" && sp != prefix) || (prefix == "" && !strings.HasPrefix(sp, "outbound_")) {
				continue
			}
			f := &InForce{Pods: 1}
			f.MaxConcurrentStreams = number(dig(hcm, "http2_protocol_options", "max_concurrent_streams"))
			f.MaxRequestsPerConnection = number(dig(hcm, "common_http_protocol_options", "max_requests_per_connection"))
			if s, ok := dig(hcm, "common_http_protocol_options", "max_connection_duration").(string); ok {
				if d, err := stacks.ParseDuration(s); err == nil {
					f.MaxConnectionDuration = time.Duration(d)
				}
			}
			_, f.ExactBalance = dig(l.Active.Listener, "connection_balance_config", "exact_balance").(map[string]any)
			return f, nil
		}
	}
	return nil, fmt.Errorf("/config_dump has no gateway listener with an HTTP connection manager (stat prefix %q)", prefix)
}

func listenerHCM(l map[string]any) map[string]any {
	chains, _ := l["filter_chains"].([]any)
	for _, fc := range chains {
		filters, _ := dig(fc, "filters").([]any)
		for _, f := range filters {
			if fm, _ := f.(map[string]any); fm["name"] == "envoy.filters.network.http_connection_manager" {
				tc, _ := fm["typed_config"].(map[string]any)
				return tc
			}
		}
	}
	return nil
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// number reads a uint32 or uint64 from JSON, which Envoy writes as a number or, for 64-bit
// values, a string.
func number(v any) uint64 {
	switch x := v.(type) {
	case float64:
		return uint64(x)
	case string:
		n, _ := strconv.ParseUint(x, 10, 64)
		return n
	}
	return 0
}
