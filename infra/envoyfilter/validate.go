package envoyfilter

import (
	"encoding/json"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3" // resolves the access log's @type
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3" // and the router's, in users' filters
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	_ "google.golang.org/protobuf/types/known/emptypb"
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

// patchTypes are the Envoy messages a patch value merges into, by what it applies to.
var patchTypes = map[networkingv1alpha3.EnvoyFilter_ApplyTo]func() proto.Message{
	networkingv1alpha3.EnvoyFilter_LISTENER:            func() proto.Message { return &listenerv3.Listener{} },
	networkingv1alpha3.EnvoyFilter_FILTER_CHAIN:        func() proto.Message { return &listenerv3.FilterChain{} },
	networkingv1alpha3.EnvoyFilter_NETWORK_FILTER:      func() proto.Message { return &listenerv3.Filter{} },
	networkingv1alpha3.EnvoyFilter_LISTENER_FILTER:     func() proto.Message { return &listenerv3.ListenerFilter{} },
	networkingv1alpha3.EnvoyFilter_HTTP_FILTER:         func() proto.Message { return &hcmv3.HttpFilter{} },
	networkingv1alpha3.EnvoyFilter_ROUTE_CONFIGURATION: func() proto.Message { return &routev3.RouteConfiguration{} },
	networkingv1alpha3.EnvoyFilter_VIRTUAL_HOST:        func() proto.Message { return &routev3.VirtualHost{} },
	networkingv1alpha3.EnvoyFilter_HTTP_ROUTE:          func() proto.Message { return &routev3.Route{} },
	networkingv1alpha3.EnvoyFilter_CLUSTER:             func() proto.Message { return &clusterv3.Cluster{} },
	networkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG:    func() proto.Message { return &corev3.TypedExtensionConfig{} },
}

// emptyAny stands in for an extension whose type igwlab's Envoy protos do not include.
var emptyAny = map[string]any{"@type": "type.googleapis.com/google.protobuf.Empty", "value": map[string]any{}}

// validateValue checks a user's patch value against the Envoy message it merges into. An
// embedded extension (an Any's @type) that the linked protos do not include cannot be
// checked: it is left out of the check and returned, so that the caller names it.
func validateValue(applyTo networkingv1alpha3.EnvoyFilter_ApplyTo, value map[string]any) ([]string, error) {
	mk, ok := patchTypes[applyTo]
	if !ok {
		return nil, nil // BOOTSTRAP and the like: istio.io/api has checked the patch's shape
	}
	var unknown []string
	cleaned := stripUnknownAnys(value, &unknown)
	raw, err := json.Marshal(cleaned)
	if err != nil {
		return nil, err
	}
	msg := mk()
	if err := strict.Unmarshal(raw, msg); err != nil {
		return nil, fmt.Errorf("does not match Envoy's %s: %v", msg.ProtoReflect().Descriptor().FullName(), err)
	}
	return unknown, nil
}

// stripUnknownAnys copies v with every object whose @type does not resolve replaced by an
// empty one, recording the types it replaced.
func stripUnknownAnys(v any, unknown *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["@type"].(string); ok {
			if _, err := protoregistry.GlobalTypes.FindMessageByURL(t); err != nil {
				*unknown = append(*unknown, t)
				return emptyAny
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = stripUnknownAnys(e, unknown)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripUnknownAnys(e, unknown)
		}
		return out
	}
	return v
}
