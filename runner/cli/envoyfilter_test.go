package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/runner/suite"
)

// TestEnvoyFilterFilesRunTheirKnobs runs 02-trigger on the local target with each EnvoyFilter
// real teams published for their gateways: the knobs the file sets are the knobs in force
// (scenario.yaml shows them, and the pool ran them: a stream cap of 100 makes the shared
// client dial five connections for its 500 streams), and what the lab does not model is named.
func TestEnvoyFilterFilesRunTheirKnobs(t *testing.T) {
	if testing.Short() {
		t.Skip("three suite runs of a 2 s window on the local target")
	}
	for _, c := range []struct {
		file       string
		sets       map[string]string // knob path: the value in force
		notApplied []string
		minConns   float64 // connections the shared client opened
	}{
		{"envoyfilter-signicat-istio-1.23-ingressgateway-edge-max-concurrent-streams-max-connection-duration.yaml",
			map[string]string{"hcm.http2_protocol_options.max_concurrent_streams": "100", "hcm.http2_protocol_options.initial_stream_window_size": "65536",
				"hcm.http2_protocol_options.initial_connection_window_size": "1048576", "hcm.common_http_protocol_options.max_connection_duration": "60s",
				"hcm.common_http_protocol_options.idle_timeout": "900s", "hcm.stream_idle_timeout": "300s", "listener.per_connection_buffer_limit_bytes": "32768"},
			[]string{"hcm.use_remote_address", "hcm.request_timeout", "hcm.normalize_path"}, 5},
		{"envoyfilter-gardener-istio-1.29-ingressgateway-http2-max-concurrent-streams.yaml",
			map[string]string{"hcm.http2_protocol_options.max_concurrent_streams": "100", "hcm.http2_protocol_options.initial_stream_window_size": "65536",
				"hcm.http2_protocol_options.initial_connection_window_size": "1048576", "listener.per_connection_buffer_limit_bytes": "32768"},
			[]string{"listener.socket_options"}, 5},
		// Intel DLB balancing: nothing the lab models, so 02-trigger runs with its own cap.
		{"envoyfilter-istio.io-blog-istio-1.17.2-ingressgateway-connection-balance-dlb.yaml",
			map[string]string{"hcm.http2_protocol_options.max_concurrent_streams": "65536"},
			[]string{"listener.connection_balance_config.extend_balance", "envoy.extensions.network.connection_balance.dlb.v3alpha.Dlb"}, 1},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := testutil.RealFixture(t, c.file)
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			if err := Run(context.Background(), []string{"suite", "--target", "local", "--only", "02-trigger", "--duration", "2s", "--envoyfilter", path, "--out", out, "--json"}, &stdout, &stderr); err != nil {
				t.Fatalf("suite: %v\n%s", err, stderr.String())
			}
			var sum suite.Summary
			if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
				t.Fatal(err)
			}
			if len(sum.EnvoyFilters) != 1 || sum.EnvoyFilters[0].File != path {
				t.Errorf("summary.json envoy_filters: %+v", sum.EnvoyFilters)
			}
			if res := sum.Scenarios["02-trigger"]; res == nil || res.ConnectionsTotal < c.minConns {
				t.Errorf("the shared client opened %+v connections, want at least %v", res, c.minConns)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "02-trigger", "scenario.yaml"))
			if len(files) != 1 {
				t.Fatalf("scenario.yaml: %v", files)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				InForce []struct{ Path, Value string } `yaml:"knobs_in_force"`
				Filters []struct {
					File       string   `yaml:"file"`
					Sets       []string `yaml:"sets"`
					NotApplied []string `yaml:"not_applied"`
				} `yaml:"envoyfilters"`
			}
			if err := yaml.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			inForce := map[string]string{}
			for _, k := range doc.InForce {
				inForce[k.Path] = k.Value
			}
			for path, want := range c.sets {
				if inForce[path] != want {
					t.Errorf("scenario.yaml: %s in force %q, want %q", path, inForce[path], want)
				}
			}
			if len(doc.Filters) != 1 || doc.Filters[0].File != path {
				t.Fatalf("scenario.yaml envoyfilters: %+v", doc.Filters)
			}
			notApplied := strings.Join(doc.Filters[0].NotApplied, "\n")
			for _, want := range c.notApplied {
				if !strings.Contains(notApplied, want) {
					t.Errorf("scenario.yaml does not name %s as not applied:\n%s", want, notApplied)
				}
			}
			if !strings.Contains(stderr.String(), "--envoyfilter "+path+": sets ") {
				t.Errorf("progress does not say what the file sets:\n%s", stderr.String())
			}
		})
	}
}

// TestBadEnvoyFilterFlag: a file that is not an EnvoyFilter, a patch Envoy's protos reject, a
// file that does not exist: every command that takes --envoyfilter refuses it with the file
// and the field, and nothing runs (no results folder).
func TestBadEnvoyFilterFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := []struct {
		path string
		want []string
	}{
		{write("service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"), []string{"service.yaml", "kind", "want EnvoyFilter"}},
		{write("typo.yaml", "apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata: {name: f}\nspec:\n  configPatches:\n  - applyTo: NETWORK_FILTER\n    match: {context: GATEWAY}\n    patch:\n      operation: MERGE\n      value:\n        typed_config:\n          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n          http2_protocol_options: {max_concurent_streams: 100}\n"),
			[]string{"typo.yaml", "spec.configPatches[0].patch.value", "max_concurent_streams"}},
		{filepath.Join(dir, "absent.yaml"), []string{"absent.yaml"}},
	}
	for _, f := range files {
		for _, cmd := range [][]string{
			{"suite", "--target", "local", "--only", "02-trigger"},
			{"sweep", "--scenario", "02-trigger", "--knob", "hcm.common_http_protocol_options.max_requests_per_connection", "--values", "100,1000"},
			{"capacity", "--scenario", "02-trigger"},
			{"serve"},
			{"knobs", "--from"},
		} {
			out := filepath.Join(dir, "results")
			args := append(append([]string{}, cmd...), f.path)
			if cmd[0] != "knobs" {
				args = append(append(append([]string{}, cmd...), "--envoyfilter", f.path), "--out", out)
				if cmd[0] == "serve" {
					args = append(append([]string{}, cmd...), "--envoyfilter", f.path)
				}
			}
			var stdout, stderr bytes.Buffer
			if code := Main(context.Background(), args, &stdout, &stderr); code != 2 {
				t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr.String())
			}
			for _, want := range f.want {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("%v: the error does not say %q:\n%s", args, want, stderr.String())
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%v: a results folder was made", args)
			}
		}
	}
}
