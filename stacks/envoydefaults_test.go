package stacks

import (
	"strings"
	"testing"
)

func TestEnvoyReleases(t *testing.T) {
	for _, r := range EnvoyReleases {
		for path, v := range r.Defaults {
			s, ok := Lookup(path)
			if !ok {
				t.Fatalf("Envoy %s: %s is no knob", r.Envoy, path)
			}
			var k Knobs
			if err := s.Set(&k, v); err != nil {
				t.Errorf("Envoy %s: %s=%s: %v", r.Envoy, path, v, err)
			}
			if r.Envoy == DefaultEnvoy && (s.Default != v || s.InForce != v) {
				t.Errorf("%s: registry default %q / in force %q, Envoy %s's %q", path, s.Default, s.InForce, r.Envoy, v)
			}
		}
	}
	r, err := LookupEnvoy("1.36")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"max_concurrent_streams": "1024", "initial_stream_window_size": "16777216", "initial_connection_window_size": "25165824"}
	for f, v := range want {
		if got := r.Defaults["hcm.http2_protocol_options."+f]; got != v {
			t.Errorf("Envoy 1.36 %s = %s, want %s", f, got, v)
		}
	}
}

func TestLookupEnvoyBadInput(t *testing.T) {
	for _, v := range []string{"", "1.34", "1.40", "latest", "1.36.0"} {
		_, err := LookupEnvoy(v)
		if err == nil || !strings.Contains(err.Error(), "allowed 1.35 (Istio 1.27), 1.36 (Istio 1.28), 1.37 (Istio 1.29), 1.38 (Istio 1.30), 1.39 (Istio 1.31)") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestEnvoyForIstio(t *testing.T) {
	for istio, want := range map[string]string{"1.26.3": "1.35", "1.27.9": "1.35", "1.28.0": "1.36", "1.29.1": "1.37", "1.30.5": "1.38", "1.31.0": "1.39", "1.32.0": "1.39"} {
		if got := EnvoyForIstio(istio).Envoy; got != want {
			t.Errorf("Istio %s: Envoy %s, want %s", istio, got, want)
		}
	}
}

func TestWithDefaultsKeepsSetKnobs(t *testing.T) {
	r, _ := LookupEnvoy("1.36")
	var k Knobs
	mcs, _ := Lookup("hcm.http2_protocol_options.max_concurrent_streams")
	if err := mcs.Set(&k, "65536"); err != nil {
		t.Fatal(err)
	}
	got := k.WithDefaults(r)
	if v, _ := mcs.Get(&got); v != "65536" {
		t.Errorf("a set stream cap became %s", v)
	}
	w, _ := Lookup("hcm.http2_protocol_options.initial_stream_window_size")
	if v, _ := w.Get(&got); v != "16777216" {
		t.Errorf("unset stream window in force under 1.36: %s", v)
	}
	if v, set := w.Get(&k); set {
		t.Errorf("WithDefaults changed its receiver: %s", v)
	}
}

func TestReleaseFor(t *testing.T) {
	for envoy, want := range map[string]string{"1.28.8": "1.35", "1.35.3": "1.35", "1.36.2": "1.36", "1.37.0": "1.37", "1.39.1": "1.39", "1.40.0": "1.39", "": DefaultEnvoy, "dev": DefaultEnvoy} {
		if got := ReleaseFor(envoy).Envoy; got != want {
			t.Errorf("Envoy %q: the defaults of %s, want %s", envoy, got, want)
		}
	}
}

// TestEnvoyReleaseCodecs: oghttp2 was the default in 1.34 through 1.36, and 1.37 returned to
// nghttp2 (envoyproxy/envoy#42319); the HTTP/2 defaults are 1.36's from then on.
func TestEnvoyReleaseCodecs(t *testing.T) {
	for _, r := range EnvoyReleases {
		want := CodecNghttp2
		if minorOf(r.Envoy) <= 36 {
			want = CodecOghttp2
		}
		if r.Codec != want {
			t.Errorf("Envoy %s runs %s, want %s", r.Envoy, r.Codec, want)
		}
		if minorOf(r.Envoy) >= 36 && r.Defaults["hcm.http2_protocol_options.max_concurrent_streams"] != "1024" {
			t.Errorf("Envoy %s: stream cap %s", r.Envoy, r.Defaults["hcm.http2_protocol_options.max_concurrent_streams"])
		}
	}
}
