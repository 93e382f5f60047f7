package infra

import (
	"strings"
	"testing"
	"time"
)

func h2dialContainer(t *testing.T, m *recorder) (image, pull string) {
	t.Helper()
	d := m.find("kubernetes:apps/v1:Deployment", "h2dial")
	if d == nil {
		t.Fatal("no h2dial Deployment")
	}
	c := d.Inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["containers"].ArrayValue()[0].ObjectValue()
	return c["image"].StringValue(), c["imagePullPolicy"].StringValue()
}

// TestPushedH2dialImage: with igwlab:h2dialImage the pod pulls that image (IfNotPresent) and
// nothing is built; without it on k3d the image is built and imported, never pulled.
func TestPushedH2dialImage(t *testing.T) {
	const pushed = "registry.example.com/igwlab/h2dial:v1"
	for _, c := range []struct {
		name string
		edit func(*Config)
	}{
		{"existing", func(c *Config) {
			c.Cluster, c.Kubeconfig, c.Images.H2dialPushed = "existing", "/tmp/kubeconfig", pushed
		}},
		{"k3d", func(c *Config) { c.Images.H2dialPushed = pushed }},
	} {
		m := run(t, c.edit)
		if img, pull := h2dialContainer(t, m); img != pushed || pull != "IfNotPresent" {
			t.Errorf("%s: h2dial runs %s (%s), want %s (IfNotPresent)", c.name, img, pull, pushed)
		}
		if m.find("command:local:Command", "h2dial-image") != nil {
			t.Errorf("%s: a pushed image is still built", c.name)
		}
	}
	m := run(t, nil)
	img, pull := h2dialContainer(t, m)
	if !strings.HasPrefix(img, Defaults.Images.H2dial+":") || pull != "Never" || m.find("command:local:Command", "h2dial-image") == nil {
		t.Errorf("k3d without a pushed image: %s (%s), built: %v", img, pull, m.find("command:local:Command", "h2dial-image") != nil)
	}
}

func TestH2dialImageValues(t *testing.T) {
	good := []string{"registry.example.com/igwlab/h2dial:v1", "localhost:5000/h2dial:3f2a9c1b7d4e",
		"ghcr.io/me/h2dial@sha256:" + strings.Repeat("a", 64), "me/h2dial:v1@sha256:" + strings.Repeat("0", 64)}
	bad := []string{"h2dial", "registry.example.com/igwlab/h2dial", "me/h2dial:latest", "Me/H2dial:v1", "my image:v1", "me/h2dial:", "me/h2dial@sha256:abc"}
	for _, v := range good {
		c := Defaults
		c.Images.H2dialPushed = v
		if errs := c.checkH2dialImage(); len(errs) > 0 {
			t.Errorf("%q refused: %v", v, errs)
		}
	}
	for _, v := range bad {
		c := Defaults
		c.Images.H2dialPushed = v
		if errs := c.checkH2dialImage(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "igwlab:h2dialImage") {
			t.Errorf("%q accepted: %v", v, errs)
		}
	}
}

// TestGatewayDrainDuration: the gateway pods' proxy config carries the drain time in
// protobuf's JSON form (whole seconds, "45s", never Go's "1m0s"); the waypoints keep Istio's.
func TestGatewayDrainDuration(t *testing.T) {
	for _, d := range []time.Duration{5 * time.Second, 90 * time.Second} {
		m := run(t, func(c *Config) { c.GatewayDrainDuration = d; c.Scenario = "07-waypoint-trigger" })
		ann := gatewayValues(t, m)["podAnnotations"].ObjectValue()["proxy.istio.io/config"].StringValue()
		want := "drainDuration: " + DurationText(d) + "\n"
		if !strings.Contains(ann, want) {
			t.Errorf("%s: proxy config %q lacks %q", d, ann, want)
		}
	}
	if got := DurationText(90 * time.Second); got != "90s" {
		t.Errorf("DurationText(90s) = %q", got)
	}
	if strings.Contains(ProxyConfig(2, 0), "drainDuration") {
		t.Error("a zero drain time is written (it would override Istio's default)")
	}
	for raw, ok := range map[string]bool{"5s": true, "1m": true, "10m": true, "0s": false, "1500ms": false, "11m": false, "5": false, "-5s": false} {
		if _, err := ParseDrainDuration(raw); (err == nil) != ok {
			t.Errorf("ParseDrainDuration(%q): %v", raw, err)
		}
	}
}
