package envoyfilter

import (
	"fmt"

	"github.com/igwlab/igwlab/stacks"
)

// A config push on the real lab is an update of the scenario's EnvoyFilter that changes the
// gateway's listener and nothing a request sees: a literal tracing tag on the connection
// manager that carries the push's generation (igwlab:gatewayPush). istiod merges it into the
// HCM, so the listener istiod sends differs in its filter chains, and Envoy replaces and
// drains every chain that carries it (ListenerImpl::newListenerWithFilterChain and
// ListenerManagerImpl::drainFilterChains, source/common/listener_manager/). A tag is only
// added to spans, and the lab exports none. The pods' /config_dump shows the generation, so
// the after-update check can tell that the push reached every pod before it waits for the
// drain (runner/stats PushInForce).

// PushTag is the tracing tag that carries the push generation.
const PushTag = stacks.PushTag

// WithPush adds the push generation to an EnvoyFilter spec that Spec rendered for t; 0 leaves
// it as it is.
func WithPush(spec map[string]any, t Target, generation int) {
	if generation <= 0 {
		return
	}
	tracing := stacks.PushTracing(generation)
	patches, _ := spec["configPatches"].([]any)
	for _, p := range patches {
		pm, _ := p.(map[string]any)
		if pm["applyTo"] != "NETWORK_FILTER" {
			continue
		}
		value := pm["patch"].(map[string]any)["value"].(map[string]any)
		value["typed_config"].(map[string]any)["tracing"] = tracing
		return
	}
	spec["configPatches"] = append(patches, hcmPatch(t.Port, map[string]any{"@type": HCMType, "tracing": tracing}))
}

// hcmPatch merges value into the HTTP connection manager of the gateway listener on port.
func hcmPatch(port int, value map[string]any) map[string]any {
	return map[string]any{
		"applyTo": "NETWORK_FILTER",
		"match": map[string]any{
			"context": "GATEWAY",
			"listener": map[string]any{
				"portNumber":  port,
				"filterChain": map[string]any{"filter": map[string]any{"name": HCMFilter}},
			},
		},
		"patch": map[string]any{"operation": "MERGE", "value": map[string]any{"typed_config": value}},
	}
}

// pushOf reads the push generation out of an HCM patch value's tracing: 0 without one, an
// error for tracing the lab does not render (anything beside the one tag).
func pushOf(hcm map[string]any) (int, error) {
	tr, ok := hcm["tracing"]
	if !ok {
		return 0, nil
	}
	trm, _ := tr.(map[string]any)
	tags, _ := trm["custom_tags"].([]any)
	n, found, err := stacks.PushGeneration(tr)
	if err != nil {
		return 0, fmt.Errorf("tracing.custom_tags: %w", err)
	}
	if len(trm) != 1 || len(tags) != 1 || !found {
		return 0, fmt.Errorf("tracing: only the %s tag igwlab renders for a config push is read", PushTag)
	}
	return n, nil
}

// Push reads the push generation out of an EnvoyFilter spec (0: none).
func Push(spec map[string]any) (int, error) {
	patches, _ := spec["configPatches"].([]any)
	for i, p := range patches {
		pm, _ := p.(map[string]any)
		if pm["applyTo"] != "NETWORK_FILTER" {
			continue
		}
		patch, _ := pm["patch"].(map[string]any)
		value, _ := patch["value"].(map[string]any)
		hcm, _ := value["typed_config"].(map[string]any)
		if n, err := pushOf(hcm); err != nil || n > 0 {
			if err != nil {
				err = fmt.Errorf("configPatches[%d]: %w", i, err)
			}
			return n, err
		}
	}
	return 0, nil
}
