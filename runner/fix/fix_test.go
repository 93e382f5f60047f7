package fix

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	egv1a1 "github.com/envoyproxy/gateway/api/v1alpha1"
	contourv1a1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"github.com/igwlab/igwlab/infra/envoyfilter"
)

// levers are the knobs predict and diagnose recommend, one lever each.
var levers = []map[string]string{
	{"hcm.http2_protocol_options.max_concurrent_streams": "100"},
	{"hcm.common_http_protocol_options.max_requests_per_connection": "300"},
	{"hcm.common_http_protocol_options.max_connection_duration": "60s"},
	{"hcm.common_http_protocol_options.max_stream_duration": "1.5s"},
	{"listener.connection_balance_config.exact_balance": "{}"},
	{"hcm.stream_idle_timeout": "300s", "hcm.http2_protocol_options.initial_stream_window_size": "65536"},
}

// strictDecode decodes o into v as the project's API server would, refusing unknown fields.
func strictDecode(t *testing.T, o map[string]any, v any) {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not decode into %T: %v\n%s", o["kind"], v, err, b)
	}
}

// TestEveryDialectEveryLever renders each lever in each dialect and decodes the result into
// that project's own Go types (istio.io/api and go-control-plane, Envoy Gateway's api/v1alpha1,
// Contour's apis/projectcontour/v1alpha1); a knob a dialect lacks must be named with the
// nearest it has, never dropped.
func TestEveryDialectEveryLever(t *testing.T) {
	for _, set := range levers {
		for _, d := range Dialects {
			g := Gateway{Dialect: d, Namespace: "edge", Name: "public", Listener: "https"}
			r, err := Render(g, set)
			if err != nil {
				t.Fatalf("%s %v: %v", d, set, err)
			}
			for _, o := range r.Objects {
				switch o["kind"] {
				case envoyfilter.Kind:
					if err := envoyfilter.Validate(o["spec"].(map[string]any)); err != nil {
						t.Errorf("%s %v: %v", d, set, err)
					}
				case "ClientTrafficPolicy":
					var ctp egv1a1.ClientTrafficPolicy
					strictDecode(t, o, &ctp)
					if len(ctp.Spec.TargetRefs) != 1 || string(ctp.Spec.TargetRefs[0].Name) != "public" {
						t.Errorf("%s: targetRefs %+v", d, ctp.Spec.TargetRefs)
					}
				case "EnvoyPatchPolicy":
					var epp egv1a1.EnvoyPatchPolicy
					strictDecode(t, o, &epp)
					if epp.Spec.Type != egv1a1.JSONPatchEnvoyPatchType || len(epp.Spec.JSONPatches) != 1 || epp.Spec.JSONPatches[0].Name != "edge/public/https" {
						t.Errorf("%s: EnvoyPatchPolicy %+v", d, epp.Spec)
					}
				case "ContourConfiguration":
					var cc contourv1a1.ContourConfiguration
					strictDecode(t, o, &cc)
				case nil: // plain Envoy's listener fields, checked by Render against Envoy's Listener
				default:
					t.Errorf("%s: unexpected kind %v", d, o["kind"])
				}
			}
			for path, value := range set {
				if !strings.Contains(r.YAML, lastKey(path, d)) && !mentions(r.Lacks, path) {
					t.Errorf("%s: %s=%s is neither rendered nor named as lacking:\n%s\nlacks %v", d, path, value, r.YAML, r.Lacks)
				}
			}
		}
	}
}

// lastKey is how a knob's last name appears in a dialect's rendering.
func lastKey(path, dialect string) string {
	key := path[strings.LastIndex(path, ".")+1:]
	switch dialect {
	case EnvoyGateway, Contour:
		parts := strings.Split(key, "_")
		for i := 1; i < len(parts); i++ {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
		key = strings.Join(parts, "")
		if key == "exactBalance" && dialect == Contour {
			return "connectionBalancer: exact"
		}
		if key == "exactBalance" {
			return "exact_balance" // in the EnvoyPatchPolicy's JSON patch, Envoy's own name
		}
		if key == "maxConcurrentStreams" && dialect == Contour {
			return "httpMaxConcurrentStreams"
		}
		if key == "idleTimeout" && dialect == Contour {
			return "connectionIdleTimeout"
		}
	}
	return key
}

func mentions(lacks []string, path string) bool {
	for _, l := range lacks {
		if strings.HasPrefix(l, path+" ") {
			return true
		}
	}
	return false
}

// TestRenderValues: the values land where each project reads them, in its units.
func TestRenderValues(t *testing.T) {
	r, err := Render(Gateway{Dialect: EnvoyGateway, Namespace: "edge", Name: "public"}, map[string]string{
		"hcm.common_http_protocol_options.max_requests_per_connection": "300",
		"hcm.common_http_protocol_options.max_stream_duration":         "1.5s",
	})
	if err != nil {
		t.Fatal(err)
	}
	var ctp egv1a1.ClientTrafficPolicy
	strictDecode(t, r.Objects[0], &ctp)
	cl := ctp.Spec.Connection.ConnectionLimit
	if cl == nil || cl.MaxRequestsPerConnection == nil || *cl.MaxRequestsPerConnection != 300 || cl.MaxStreamDuration == nil || string(*cl.MaxStreamDuration) != "1500ms" {
		t.Errorf("connectionLimit %+v", cl)
	}
	for _, bad := range []struct {
		g    Gateway
		set  map[string]string
		want string
	}{
		{Gateway{Dialect: "traefik"}, nil, "allowed istio"},
		{Gateway{Dialect: EnvoyGateway}, nil, "--gateway-name"},
		{Gateway{Dialect: Istio}, map[string]string{"hcm.no_such": "1"}, "no such knob"},
		{Gateway{Dialect: Istio}, map[string]string{"hcm.http2_protocol_options.max_concurrent_streams": "0"}, "max_concurrent_streams"},
	} {
		if _, err := Render(bad.g, bad.set); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v %v: error %v, want %q", bad.g, bad.set, err, bad.want)
		}
	}
}
