package envoyfilter

import (
	"encoding/json"
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3" // resolves the access log's @type
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
)

// strict rejects unknown fields: a misspelt knob must fail, not vanish.
var strict = protojson.UnmarshalOptions{DiscardUnknown: false}

// Validate checks an EnvoyFilter spec against istio.io/api's EnvoyFilter, and every patch
// value against the Envoy proto it merges into: a NETWORK_FILTER patch is a
// config.listener.v3.Filter (its typed_config decoded as the HttpConnectionManager its @type
// names), a LISTENER patch a config.listener.v3.Listener.
func Validate(spec map[string]any) error {
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var ef networkingv1alpha3.EnvoyFilter
	if err := strict.Unmarshal(raw, &ef); err != nil {
		return fmt.Errorf("EnvoyFilter spec does not match istio.io/api networking/v1alpha3: %w", err)
	}
	for i, p := range ef.GetConfigPatches() {
		value, err := protojson.Marshal(p.GetPatch().GetValue())
		if err != nil {
			return err
		}
		var msg proto.Message
		switch p.GetApplyTo() {
		case networkingv1alpha3.EnvoyFilter_NETWORK_FILTER:
			msg = &listenerv3.Filter{}
		case networkingv1alpha3.EnvoyFilter_LISTENER:
			msg = &listenerv3.Listener{}
		default:
			return fmt.Errorf("configPatches[%d]: applyTo %s is not checked by igwlab", i, p.GetApplyTo())
		}
		if err := strict.Unmarshal(value, msg); err != nil {
			return fmt.Errorf("configPatches[%d] (%s) value does not match Envoy's %T: %w", i, p.GetApplyTo(), msg, err)
		}
	}
	return nil
}

// ValidateRequestAuthentication checks a RequestAuthentication object's spec against istio.io/api.
func ValidateRequestAuthentication(obj map[string]any) error {
	raw, err := json.Marshal(obj["spec"])
	if err != nil {
		return err
	}
	var ra securityv1beta1.RequestAuthentication
	if err := strict.Unmarshal(raw, &ra); err != nil {
		return fmt.Errorf("RequestAuthentication spec does not match istio.io/api security: %w", err)
	}
	return nil
}
