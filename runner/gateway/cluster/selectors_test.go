package cluster

import (
	"testing"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/gateway"
)

// TestDiagnoseLooksWhereTheLabsGatewayIs: igwlab diagnose's Kubernetes defaults (kept in a
// package the local binary links, which cannot import the lab program) are the namespace and
// selector of the lab's gateway pods.
func TestDiagnoseLooksWhereTheLabsGatewayIs(t *testing.T) {
	s := selectors[gateway.Gateway]
	if diagnose.LabNamespace != infra.GatewayNamespace || diagnose.LabNamespace != s.ns || diagnose.LabSelector != s.sel {
		t.Errorf("diagnose looks for %s in %s; the lab's gateway pods are %s in %s", diagnose.LabSelector, diagnose.LabNamespace, s.sel, s.ns)
	}
}
