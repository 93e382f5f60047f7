package fix

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// field is where a knob goes in a dialect's object: a path of keys, and how its value is
// written there.
type field struct {
	path []string
	conv func(string) (any, error)
}

// Envoy Gateway's ClientTrafficPolicy fields (gateway.envoyproxy.io/v1alpha1,
// api/v1alpha1/clienttrafficpolicy_types.go, connection_types.go ConnectionLimit,
// shared_types.go HTTP2Settings, timeout_types.go HTTPClientTimeout).
var envoyGatewayFields = map[string]field{
	"hcm.common_http_protocol_options.max_requests_per_connection": {[]string{"connection", "connectionLimit", "maxRequestsPerConnection"}, toInt},
	"hcm.common_http_protocol_options.max_connection_duration":     {[]string{"connection", "connectionLimit", "maxConnectionDuration"}, toGatewayDuration},
	"hcm.common_http_protocol_options.max_stream_duration":         {[]string{"connection", "connectionLimit", "maxStreamDuration"}, toGatewayDuration},
	"hcm.common_http_protocol_options.idle_timeout":                {[]string{"timeout", "http", "idleTimeout"}, toGatewayDuration},
	"hcm.stream_idle_timeout":                                      {[]string{"timeout", "http", "streamIdleTimeout"}, toGatewayDuration},
	"hcm.http2_protocol_options.max_concurrent_streams":            {[]string{"http2", "maxConcurrentStreams"}, toInt},
	"hcm.http2_protocol_options.initial_stream_window_size":        {[]string{"http2", "initialStreamWindowSize"}, toString},
	"hcm.http2_protocol_options.initial_connection_window_size":    {[]string{"http2", "initialConnectionWindowSize"}, toString},
}

// Contour's ContourConfiguration fields (projectcontour.io/v1alpha1,
// apis/projectcontour/v1alpha1/contourconfig.go EnvoyListenerConfig, TimeoutParameters).
var contourFields = map[string]field{
	"hcm.common_http_protocol_options.max_requests_per_connection": {[]string{"envoy", "listener", "maxRequestsPerConnection"}, toInt},
	"hcm.http2_protocol_options.max_concurrent_streams":            {[]string{"envoy", "listener", "httpMaxConcurrentStreams"}, toInt},
	"listener.connection_balance_config.exact_balance":             {[]string{"envoy", "listener", "connectionBalancer"}, func(string) (any, error) { return "exact", nil }},
	"hcm.common_http_protocol_options.max_connection_duration":     {[]string{"envoy", "timeouts", "maxConnectionDuration"}, toGatewayDuration},
	"hcm.common_http_protocol_options.idle_timeout":                {[]string{"envoy", "timeouts", "connectionIdleTimeout"}, toGatewayDuration},
	"hcm.stream_idle_timeout":                                      {[]string{"envoy", "timeouts", "streamIdleTimeout"}, toGatewayDuration},
}

func (r *Rendering) envoyGateway(g Gateway, set map[string]string) error {
	if g.Name == "" {
		return fmt.Errorf("--gateway %s needs the Gateway's name (--gateway-name)", g.Dialect)
	}
	target := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": g.Name}
	spec := map[string]any{"targetRefs": []any{target}}
	var patches []any
	for _, v := range setKnobs(set) {
		f, ok := envoyGatewayFields[v.Path]
		switch {
		case ok:
			if err := put(spec, f, set[v.Path]); err != nil {
				return fmt.Errorf("knob %s: %w", v.Path, err)
			}
		case v.Path == "listener.connection_balance_config.exact_balance":
			listener := g.Listener
			if listener == "" {
				listener = "http"
			}
			patches = append(patches, map[string]any{
				"type": "type.googleapis.com/envoy.config.listener.v3.Listener",
				"name": g.Namespace + "/" + g.Name + "/" + listener,
				"operation": map[string]any{"op": "add", "path": "/connection_balance_config",
					"value": map[string]any{"exact_balance": map[string]any{}}},
			})
			r.Notes = append(r.Notes, fmt.Sprintf("ClientTrafficPolicy has no field for exact_balance: the EnvoyPatchPolicy patches listener %s/%s/%s (namespace/Gateway/listener section; --gateway-listener names the section), and Envoy Gateway applies it only with extensionApis.enableEnvoyPatchPolicy: true in its configuration", g.Namespace, g.Name, listener))
		default:
			r.Lacks = append(r.Lacks, fmt.Sprintf("%s %s: no ClientTrafficPolicy field; nearest: an EnvoyPatchPolicy JSONPatch on the listener's %s", v.Path, v.Value, envoyField(v.Path)))
		}
	}
	if len(spec) > 1 {
		r.Objects = append(r.Objects, map[string]any{"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "ClientTrafficPolicy",
			"metadata": map[string]any{"name": "igwlab-fix", "namespace": g.Namespace}, "spec": spec})
	}
	if len(patches) > 0 {
		r.Objects = append(r.Objects, map[string]any{"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyPatchPolicy",
			"metadata": map[string]any{"name": "igwlab-fix", "namespace": g.Namespace},
			"spec":     map[string]any{"targetRef": target, "type": "JSONPatch", "jsonPatches": patches}})
	}
	return nil
}

func (r *Rendering) contour(set map[string]string) error {
	spec := map[string]any{}
	for _, v := range setKnobs(set) {
		f, ok := contourFields[v.Path]
		if !ok {
			nearest := "no ContourConfiguration field"
			if v.Path == "hcm.common_http_protocol_options.max_stream_duration" {
				nearest += "; nearest: an HTTPProxy route's timeoutPolicy.response, which ends a stream whose response has not completed by then"
			}
			r.Lacks = append(r.Lacks, fmt.Sprintf("%s %s: %s", v.Path, v.Value, nearest))
			continue
		}
		if err := put(spec, f, set[v.Path]); err != nil {
			return fmt.Errorf("knob %s: %w", v.Path, err)
		}
	}
	if len(spec) > 0 {
		r.Objects = append(r.Objects, map[string]any{"apiVersion": "projectcontour.io/v1alpha1", "kind": "ContourConfiguration",
			"metadata": map[string]any{"name": "contour", "namespace": "projectcontour"}, "spec": spec})
		r.Notes = append(r.Notes, "ContourConfiguration is Contour's global configuration: these settings apply to every listener Contour manages (the same keys go under envoy: in contour's config file)")
	}
	return nil
}

// envoy renders the fields to merge into the listener, checked against Envoy's own Listener
// proto (go-control-plane) with the connection manager's typed_config resolved.
func (r *Rendering) envoy(k stacks.Knobs) error {
	l := k.Envoy("listener.")
	if hcm := k.Envoy("hcm."); len(hcm) > 0 {
		hcm["@type"] = envoyfilter.HCMType
		l["filter_chains"] = []any{map[string]any{"filters": []any{map[string]any{"name": envoyfilter.HCMFilter, "typed_config": hcm}}}}
	}
	raw, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(raw, &listenerv3.Listener{}); err != nil {
		return fmt.Errorf("the listener fields do not match Envoy's Listener: %w", err)
	}
	r.Objects = append(r.Objects, l)
	r.Notes = append(r.Notes, "merge these fields into your listener: the connection manager's into the http_connection_manager filter of each filter chain that carries the traffic")
	return nil
}

// put sets f's path in m to v converted.
func put(m map[string]any, f field, v string) error {
	val, err := f.conv(v)
	if err != nil {
		return err
	}
	for _, key := range f.path[:len(f.path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[f.path[len(f.path)-1]] = val
	return nil
}

func toInt(v string) (any, error) { return strconv.ParseUint(v, 10, 32) }

func toString(v string) (any, error) { return v, nil }

// toGatewayDuration writes a duration as Gateway API's Duration (GEP-2257): whole seconds as
// "10s", anything finer in milliseconds.
func toGatewayDuration(v string) (any, error) {
	d, err := stacks.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return nil, err
	}
	if d.D()%time.Second == 0 {
		return fmt.Sprintf("%ds", d.D()/time.Second), nil
	}
	return fmt.Sprintf("%dms", d.D().Milliseconds()), nil
}
