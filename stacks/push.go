package stacks

import (
	"fmt"
	"strconv"
)

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

// PushGeneration finds the push tag in an HCM tracing block (as PushTracing writes it, or as
// /config_dump shows it among istiod's own tags): its generation, whether it was there, and an
// error for a tag whose value is not a generation.
func PushGeneration(tracing any) (int, bool, error) {
	tr, _ := tracing.(map[string]any)
	tags, _ := tr["custom_tags"].([]any)
	for _, t := range tags {
		tag, _ := t.(map[string]any)
		if tag["tag"] != PushTag {
			continue
		}
		lit, _ := tag["literal"].(map[string]any)
		n, err := strconv.Atoi(fmt.Sprint(lit["value"]))
		if err != nil || n < 1 {
			return 0, true, fmt.Errorf("tracing tag %s has the value %v, not a generation 1..", PushTag, lit["value"])
		}
		return n, true, nil
	}
	return 0, false, nil
}
