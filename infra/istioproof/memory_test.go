package istioproof

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestGatewayMemoryLimitIsTheCharts: the gateway chart's default memory limit (values.yaml
// resources.limits.memory, read from Istio's own chart at the pinned release) is what the
// program gives the lab's gateway pods and what the local target holds each emulated pod to,
// so a pod OOM-killed locally is one the cluster would lose too.
func TestGatewayMemoryLimitIsTheCharts(t *testing.T) {
	in, _, rendered := loadLab(t)
	r, _ := in.Release("gateway")
	c, err := LoadChart(r.Chart, r.Version)
	if err != nil {
		t.Fatal(err)
	}
	def, ok := At(c.Values, "resources.limits.memory")
	if !ok { // Istio's charts since 1.2x keep their defaults under _internal_defaults_do_not_set
		def, ok = At(c.Values, "_internal_defaults_do_not_set.resources.limits.memory")
	}
	if !ok {
		t.Fatalf("the %s chart %s has no resources.limits.memory default", r.Chart, r.Version)
	}
	chart := quantity(t, "the chart's default", def)
	d := Find(rendered["gateway"], "Deployment", r.Name)
	containers, _ := At(d, "spec.template.spec.containers")
	list, _ := containers.([]any)
	if len(list) == 0 {
		t.Fatal("the rendered gateway Deployment has no containers")
	}
	got, _ := At(list[0], "resources.limits.memory")
	if q := quantity(t, "the rendered gateway's limit", got); q != chart {
		t.Errorf("the lab's gateway pods get a %d-byte memory limit, the chart's default is %d (%v)", q, chart, def)
	}
	if in.LocalGatewayMemoryLimit != chart {
		t.Errorf("the local target holds its pods to %d bytes (stacks.GatewayMemoryLimit), the chart's default is %d (%v)",
			in.LocalGatewayMemoryLimit, chart, def)
	}
	t.Logf("gateway chart %s: resources.limits.memory %v = %d bytes, as on the lab and the local target", r.Version, def, chart)
}

func quantity(t *testing.T, what string, v any) int64 {
	q := parsed(t, what, v)
	return q.Value()
}

// parsed is a Kubernetes quantity a chart rendered (a string such as "500m" or "2048Mi").
func parsed(t *testing.T, what string, v any) resource.Quantity {
	t.Helper()
	s, _ := v.(string)
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("%s %v: %v", what, v, err)
	}
	return q
}
