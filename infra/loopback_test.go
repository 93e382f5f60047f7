package infra

import (
	"regexp"
	"strings"
	"testing"
)

// TestClusterPublishesOnLoopbackOnly: the k3d cluster publishes the Kubernetes API and the
// gateway's port 80 on 127.0.0.1 only, and no Envoy admin or stats port (15000, 15090) at all:
// the runner reaches those through the Kubernetes API, never through a published port.
func TestClusterPublishesOnLoopbackOnly(t *testing.T) {
	m := run(t, nil)
	c := m.find("command:local:Command", "k3d-cluster")
	if c == nil {
		t.Fatal("no k3d-cluster command")
	}
	create := c.Inputs["create"].StringValue()
	if !strings.Contains(create, "--api-port 127.0.0.1:") {
		t.Errorf("the API server is not published on 127.0.0.1: %s", create)
	}
	ports := regexp.MustCompile(`(?:-p|--port) '?([^' ]+)`).FindAllStringSubmatch(create, -1)
	if len(ports) == 0 {
		t.Fatalf("no port mapping in %s", create)
	}
	for _, p := range ports {
		if !strings.HasPrefix(p[1], "127.0.0.1:") {
			t.Errorf("port mapping %q is published beyond loopback (want 127.0.0.1:HOSTPORT:PORT)", p[1])
		}
		if strings.Contains(p[1], ":15000") || strings.Contains(p[1], ":15090") {
			t.Errorf("port mapping %q publishes an Envoy admin port", p[1])
		}
	}
}
