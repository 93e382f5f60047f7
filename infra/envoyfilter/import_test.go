package envoyfilter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
)

// The EnvoyFilters real teams published, read onto the lab's gateway: each sets exactly the
// knobs its patches give, and names every field the lab does not model.
func TestRealEnvoyFilters(t *testing.T) {
	cases := []struct {
		file       string
		sets       []string
		notApplied []string
		notes      []string
	}{
		{"envoyfilter-signicat-istio-1.23-ingressgateway-edge-max-concurrent-streams-max-connection-duration.yaml",
			[]string{"hcm.http2_protocol_options.max_concurrent_streams=100", "hcm.http2_protocol_options.initial_stream_window_size=65536",
				"hcm.http2_protocol_options.initial_connection_window_size=1048576", "hcm.common_http_protocol_options.max_connection_duration=60s",
				"hcm.common_http_protocol_options.idle_timeout=900s", "hcm.stream_idle_timeout=300s", "listener.per_connection_buffer_limit_bytes=32768"},
			[]string{"hcm.request_headers_timeout", "hcm.request_timeout", "hcm.use_remote_address", "hcm.normalize_path", "hcm.merge_slashes",
				"hcm.path_with_escaped_slashes_action", "hcm.common_http_protocol_options.headers_with_underscores_action"}, nil},
		{"envoyfilter-gardener-istio-1.29-ingressgateway-http2-max-concurrent-streams.yaml",
			[]string{"hcm.http2_protocol_options.max_concurrent_streams=100", "hcm.http2_protocol_options.initial_stream_window_size=65536",
				"hcm.http2_protocol_options.initial_connection_window_size=1048576", "listener.per_connection_buffer_limit_bytes=32768"},
			[]string{"listener.socket_options"}, []string{"port 999: read onto the lab gateway's listener, port 80"}},
		{"envoyfilter-istio.io-blog-istio-1.17.2-ingressgateway-connection-balance-dlb.yaml", nil,
			[]string{"envoy.extensions.network.connection_balance.dlb.v3alpha.Dlb", "listener.connection_balance_config.extend_balance"}, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			imp, err := ReadFile(testutil.RealFixture(t, c.file), DefaultTarget)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(imp.Sets, " "); len(imp.Sets) != len(c.sets) || !containsAll(got, c.sets) {
				t.Errorf("sets %q, want exactly %q", imp.Sets, c.sets)
			}
			na := strings.Join(imp.NotApplied, "\n")
			if !containsAll(na, c.notApplied) {
				t.Errorf("not applied:\n%s\nwant it to name %q", na, c.notApplied)
			}
			if notes := strings.Join(imp.Notes, "\n"); !containsAll(notes, c.notes) {
				t.Errorf("notes %q, want %q", notes, c.notes)
			}
		})
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Bad files are refused with the file and the field: not an EnvoyFilter, a value Envoy's protos
// reject, a value out of Envoy's range, a patch no gateway takes, a file that is not there.
func TestBadEnvoyFilterFiles(t *testing.T) {
	const head = "apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata: {name: f}\nspec:\n"
	hcm := func(body string) string {
		return head + "  configPatches:\n  - applyTo: NETWORK_FILTER\n    match: {context: GATEWAY}\n    patch:\n      operation: MERGE\n      value:\n        typed_config:\n" +
			"          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n" + body
	}
	cases := []struct {
		name, text string
		want       []string
	}{
		{"a Service", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", []string{"bad.yaml", "kind", `"Service": want EnvoyFilter`}},
		{"a VirtualService", "apiVersion: networking.istio.io/v1\nkind: VirtualService\n", []string{"kind", "want EnvoyFilter"}},
		{"empty", "", []string{"bad.yaml", "empty"}},
		{"not YAML", "kind: [", []string{"bad.yaml", "not valid YAML"}},
		{"no spec", head[:strings.Index(head, "spec:")], []string{"spec", "missing"}},
		{"istio rejects", head + "  configPatches:\n  - applyTo: NOT_A_THING\n", []string{"spec", "istio.io/api"}},
		{"envoy rejects", hcm("          http2_protocol_options: {max_concurent_streams: 100}\n"),
			[]string{"spec.configPatches[0].patch.value", "does not match Envoy's", "unknown field", "max_concurent_streams"}},
		{"out of envoy's range", hcm("          http2_protocol_options: {initial_stream_window_size: 1000}\n"),
			[]string{"spec.configPatches[0].patch.value.typed_config.http2_protocol_options.initial_stream_window_size", "allowed 65535..2147483647"}},
		{"sidecar context", head + "  configPatches:\n  - applyTo: LISTENER\n    match: {context: SIDECAR_INBOUND}\n    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}\n",
			[]string{"match.context", "SIDECAR_INBOUND applies to sidecars"}},
		{"another workload", head + "  workloadSelector: {labels: {app: productpage}}\n  configPatches: []\n", []string{"spec.workloadSelector", "app=productpage", "does not select the lab's gateway"}},
		{"old proxy", head + "  configPatches:\n  - applyTo: LISTENER\n    match: {context: GATEWAY, proxy: {proxyVersion: '^1\\.20.*'}}\n    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}\n",
			[]string{"proxyVersion", "does not match the gateway's Istio 1.31.0"}},
		{"two ports", head + "  configPatches:\n  - applyTo: LISTENER\n    match: {context: GATEWAY, listener: {portNumber: 80}}\n    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}\n" +
			"  - applyTo: LISTENER\n    match: {context: GATEWAY, listener: {portNumber: 443}}\n    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 2048}}\n",
			[]string{"match.listener", "ports 443", "80", "one file per port"}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			imp, err := ReadFile(p, DefaultTarget)
			if err == nil {
				t.Fatalf("accepted: %+v", imp)
			}
			if !containsAll(err.Error(), c.want) {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
		})
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.yaml"), DefaultTarget); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}
