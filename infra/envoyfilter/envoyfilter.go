// Package envoyfilter renders a scenario's knobs as the Istio EnvoyFilter that puts them on the
// ingress gateway, reads knobs back out of one, and checks every patch against Envoy's own
// proto types and the EnvoyFilter against istio.io/api. The Pulumi program, the runner and
// the local target all go through it, so a knob is spelt in one place: the scenario catalog.
package envoyfilter

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/stacks"
)

// Kubernetes identities of what this package renders.
const (
	APIVersion      = "networking.istio.io/v1alpha3"
	Kind            = "EnvoyFilter"
	HCMFilter       = "envoy.filters.network.http_connection_manager"
	HCMType         = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	FileLogType     = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
	ScenarioLabel   = "igwlab.dev/scenario"
	DefaultName     = "igwlab-scenario"
	RequestAuthName = "igwlab-jwt"
)

// Target says which gateway the filter is for.
type Target struct {
	// Namespace of the gateway pods (the filter lives there).
	Namespace string
	// Selector matches the gateway pods' labels.
	Selector map[string]string
	// Port is the port Envoy's listener binds: the gateway Service's targetPort, 80 for the
	// Istio gateway Helm chart (8080 for the old istioctl gateway). A wrong port matches nothing
	// and fails silently, which is why it is set in one place.
	Port int
	// Istio is the release the gateway runs: a patch's match.proxy.proxyVersion is checked
	// against it, as istiod matches it against the proxy's ISTIO_VERSION.
	Istio string
}

// DefaultTarget is the lab's gateway: the Istio gateway chart released as istio-ingressgateway.
// Istio is the lab's default release (infra.DefaultIstio; a test holds them equal).
var DefaultTarget = Target{Namespace: "istio-ingress", Selector: map[string]string{"istio": "ingressgateway"}, Port: 80, Istio: "1.31.0"}

// Object renders the whole EnvoyFilter for a scenario, named name. A scenario without knobs
// still gets one, with no patches, so that switching to it replaces the previous scenario's
// filter in place.
func Object(name string, sc stacks.Scenario, t Target) map[string]any {
	return object(name, t.Namespace, sc.Name, Spec(sc, t))
}

// object is an EnvoyFilter named name in namespace, labelled with its scenario.
func object(name, namespace, scenario string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": APIVersion,
		"kind":       Kind,
		"metadata": map[string]any{
			"name":      name,
			"namespace": namespace,
			"labels":    map[string]any{"app.kubernetes.io/part-of": "igwlab", ScenarioLabel: scenario},
		},
		"spec": spec,
	}
}

// Spec renders the EnvoyFilter spec for a scenario. An east-west scenario's knobs are the
// waypoint's (WaypointSpec): the gateway's filter carries none of them.
func Spec(sc stacks.Scenario, t Target) map[string]any {
	if sc.EastWest != nil {
		sc.Knobs, sc.Filters = stacks.Knobs{}, stacks.Filters{}
	}
	sel := map[string]any{}
	for k, v := range t.Selector {
		sel[k] = v
	}
	patches := []any{}
	if hcm := hcmValue(sc); len(hcm) > 0 {
		hcm["@type"] = HCMType
		patches = append(patches, hcmPatch(t.Port, hcm))
	}
	if l := sc.Knobs.Envoy("listener."); len(l) > 0 {
		patches = append(patches, map[string]any{
			"applyTo": "LISTENER",
			"match":   map[string]any{"context": "GATEWAY", "listener": map[string]any{"portNumber": t.Port}},
			"patch":   map[string]any{"operation": "MERGE", "value": l},
		})
	}
	return map[string]any{"workloadSelector": map[string]any{"labels": sel}, "configPatches": patches}
}

func hcmValue(sc stacks.Scenario) map[string]any {
	v := sc.Knobs.Envoy("hcm.")
	if al := sc.Filters.AccessLog; al != nil {
		flags := make([]any, len(al.ResponseFlags))
		for i, f := range al.ResponseFlags {
			flags[i] = f
		}
		v["access_log"] = []any{map[string]any{
			"name":   "envoy.access_loggers.file",
			"filter": map[string]any{"response_flag_filter": map[string]any{"flags": flags}},
			"typed_config": map[string]any{
				"@type": FileLogType,
				"path":  "/dev/stdout",
				"log_format": map[string]any{"json_format": map[string]any{
					"start_time":     "%START_TIME%",
					"method":         "%REQ(:METHOD)%",
					"path":           "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
					"protocol":       "%PROTOCOL%",
					"response_code":  "%RESPONSE_CODE%",
					"response_flags": "%RESPONSE_FLAGS%",
					"duration":       "%DURATION%",
				}},
			},
		}}
	}
	return v
}

// Knobs reads the knobs and the access-log filter back out of an EnvoyFilter spec that Spec
// rendered (or that a user wrote the same way). Patches it does not understand are an error:
// a knob that the runner cannot see would be a knob it cannot verify.
func Knobs(spec map[string]any) (stacks.Knobs, *stacks.AccessLog, error) {
	var k stacks.Knobs
	var al *stacks.AccessLog
	patches, _ := spec["configPatches"].([]any)
	for i, p := range patches {
		pm, _ := p.(map[string]any)
		patch, _ := pm["patch"].(map[string]any)
		value, _ := patch["value"].(map[string]any)
		var root map[string]any
		var prefix string
		switch pm["applyTo"] {
		case "NETWORK_FILTER":
			root, _ = value["typed_config"].(map[string]any)
			prefix = "hcm."
		case "LISTENER":
			root, prefix = value, "listener."
		default:
			return k, nil, fmt.Errorf("configPatches[%d]: applyTo %v is not one igwlab renders", i, pm["applyTo"])
		}
		skip := []string{"access_log"}
		if prefix == "hcm." {
			skip = append(skip, "tracing") // a config push's generation (push.go), not a knob
			if _, err := pushOf(root); err != nil {
				return k, nil, fmt.Errorf("configPatches[%d]: %w", i, err)
			}
		}
		if err := k.ReadEnvoy(root, prefix, skip...); err != nil {
			return k, nil, fmt.Errorf("configPatches[%d]: %w", i, err)
		}
		if logs, ok := root["access_log"].([]any); ok && prefix == "hcm." {
			al = &stacks.AccessLog{}
			for _, l := range logs {
				lm, _ := l.(map[string]any)
				f, _ := lm["filter"].(map[string]any)
				rf, _ := f["response_flag_filter"].(map[string]any)
				flags, _ := rf["flags"].([]any)
				for _, fl := range flags {
					al.ResponseFlags = append(al.ResponseFlags, fmt.Sprint(fl))
				}
			}
		}
	}
	return k, al, nil
}

// RequestAuthentication renders scenario 11's JWT rule: with no AuthorizationPolicy it is
// permissive (a request without a token passes, a bad token is rejected). jwks is the key set
// inline; when empty, Istio's sample key set is referenced by URL instead.
func RequestAuthentication(sc stacks.Scenario, t Target, jwks string) map[string]any {
	if sc.Filters.JWT == nil {
		return nil
	}
	sel := map[string]any{}
	for k, v := range t.Selector {
		sel[k] = v
	}
	rule := map[string]any{"issuer": sc.Filters.JWT.Issuer, "forwardOriginalToken": true}
	if jwks != "" {
		rule["jwks"] = jwks
	} else {
		rule["jwksUri"] = SampleJWKSURI
	}
	return map[string]any{
		"apiVersion": "security.istio.io/v1",
		"kind":       "RequestAuthentication",
		"metadata": map[string]any{"name": RequestAuthName, "namespace": t.Namespace,
			"labels": map[string]any{"app.kubernetes.io/part-of": "igwlab", ScenarioLabel: sc.Name}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": sel}, "jwtRules": []any{rule}},
	}
}

// SampleJWKSURI is Istio's published sample key set for its demo token (release-1.27).
const SampleJWKSURI = "https://raw.githubusercontent.com/istio/istio/release-1.27/security/tools/jwt/samples/jwks.json"

// YAML renders an object as Kubernetes YAML (keys sorted, so output is stable).
func YAML(obj map[string]any) ([]byte, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return []byte(b.String()), enc.Close()
}
