package stacks

import "strconv"

// PushTag is the tracing tag whose literal value carries a config push's generation on the
// real lab: the one field of the gateway's connection manager a push changes (see
// infra/envoyfilter WithPush). Spelt here, with the knobs, for the filter that writes it,
// the /config_dump reader that checks it and the local pool's /config_dump.
const PushTag = "igwlab.push"

// PushTracing is the HCM tracing block that carries push generation n, as an EnvoyFilter
// patch and /config_dump spell it.
func PushTracing(n int) map[string]any {
	return map[string]any{"custom_tags": []any{map[string]any{
		"tag": PushTag, "literal": map[string]any{"value": strconv.Itoa(n)}}}}
}
