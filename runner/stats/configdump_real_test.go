package stats

import (
	"os"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
	"github.com/igwlab/igwlab/stacks"
)

// Two pods of one Istio 1.20.8 gateway (Envoy 1.28.8), as published: their listener sets no
// HTTP/2 option, so every knob is in force at Envoy 1.28's default, the same on both pods, and
// a knob asked for at its default is in force without the field.
func TestRealGatewayDumpsReadAsDefaults(t *testing.T) {
	var first *ConfigInForce
	for _, name := range []string{
		"istio-1.20.8-ossm-ingressgateway-config_dump-pod-x8nls.json",
		"istio-1.20.8-ossm-ingressgateway-config_dump-pod-6p8p2.json",
	} {
		dump, err := os.ReadFile(testutil.RealFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ReadInForce(dump, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Envoy != "1.28.8" || c.Release.Envoy != stacks.EnvoyReleases[0].Envoy {
			t.Errorf("%s: Envoy %q, defaults of %q", name, c.Envoy, c.Release.Envoy)
		}
		for _, k := range c.Knobs {
			spec, _ := stacks.Lookup(k.Path)
			want := spec.Default
			if v, ok := c.Release.Defaults[k.Path]; ok {
				want = v
			}
			if k.Value != want {
				t.Errorf("%s: %s = %s, not the default %s", name, k.Path, k.Value, want)
			}
		}
		if got := c.Knob("hcm.http2_protocol_options.max_concurrent_streams"); got.Set || got.Value != "2147483647" {
			t.Errorf("%s: stream cap %+v", name, got)
		}
		if first == nil {
			first = &c
		} else if a, b := knobsText(*first), knobsText(c); a != b {
			t.Errorf("two pods of one gateway read differently:\n%s\n%s", a, b)
		}
		atDefault, over := streams(t, "2147483647"), streams(t, "100")
		if m, err := MissingKnobs(dump, atDefault, ""); err != nil || len(m) != 0 {
			t.Errorf("%s: the default stream cap reads as missing: %v %v", name, m, err)
		}
		if m, _ := MissingKnobs(dump, over, ""); len(m) != 1 || m[0] != "hcm.http2_protocol_options.max_concurrent_streams=100 (dump: not set, so 2147483647)" {
			t.Errorf("%s: a cap the pod does not run: %v", name, m)
		}
	}
}

// The Envoy version is read from any Envoy's bootstrap: here a sidecar's of the same mesh.
func TestRealSidecarDumpNamesItsEnvoy(t *testing.T) {
	dump, err := os.ReadFile(testutil.RealFixture(t, "istio-1.20.8-ossm-sidecar-config_dump-hello-openshift.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v := EnvoyVersion(dump); v != "1.28.8" {
		t.Errorf("sidecar Envoy %q", v)
	}
	if v := EnvoyVersion([]byte(`{"configs":[]}`)); v != "" {
		t.Errorf("a dump without a bootstrap names Envoy %q", v)
	}
}

func streams(t *testing.T, v string) stacks.Knobs {
	t.Helper()
	var k stacks.Knobs
	spec, _ := stacks.Lookup("hcm.http2_protocol_options.max_concurrent_streams")
	if err := spec.Set(&k, v); err != nil {
		t.Fatal(err)
	}
	return k
}

func knobsText(c ConfigInForce) string {
	var b strings.Builder
	for _, k := range c.Knobs {
		b.WriteString(k.Path + "=" + k.Value + " ")
	}
	return b.String()
}
