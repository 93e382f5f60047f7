package infra

import (
	"fmt"
	"testing"
	"time"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// TestPoolEventsChangeOnlyTheirResource: each pool change a scenario's events make on the
// real lab changes one resource, so a preview shows it as that and nothing else: a scale or a
// rolling restart updates the gateway's Helm release (replicaCount; the pod template's
// restartedAt annotation and the Deployment's strategy), a config push updates the
// scenario's EnvoyFilter (its push generation, checked against Envoy's and Istio's types).
func TestPoolEventsChangeOnlyTheirResource(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	gateway := []string{"kubernetes:helm.sh/v3:Release " + GatewayRelease, "igwlab:lab:IngressGateway gateway"}
	filter := []string{efType + " envoyfilter", "igwlab:lab:Scenario scenario"}
	cases := []struct {
		name    string
		edit    func(*Config)
		changed []string
	}{
		{"scale to 3", func(c *Config) { c.GatewayReplicas = 3 }, gateway},
		{"rolling restart", func(c *Config) { c.Rollout = Rollout{RestartedAt: at, MaxSurge: "1", MaxUnavailable: "0"} }, gateway},
		{"config push", func(c *Config) { c.Rollout.Push = 2 }, filter},
	}
	base := run(t, scenario("02-trigger"))
	for _, c := range cases {
		m := run(t, func(cfg *Config) { scenario("02-trigger")(cfg); c.edit(cfg) })
		a, b := base.inputs(), m.inputs()
		allowed := map[string]bool{}
		for _, k := range c.changed {
			allowed[k] = true // the component's outputs may change with its child
		}
		if k := c.changed[0]; a[k] == b[k] {
			t.Errorf("%s left %s unchanged", c.name, k)
		}
		for k := range union(a, b) {
			if a[k] != b[k] && !allowed[k] {
				t.Errorf("%s changed %s", c.name, k)
			}
		}
		v := gatewayValues(t, m)
		switch c.name {
		case "scale to 3":
			if v["replicaCount"].NumberValue() != 3 || v["autoscaling"].ObjectValue()["enabled"].BoolValue() {
				t.Errorf("scale: replicas %v, autoscaling %v", v["replicaCount"], v["autoscaling"])
			}
		case "rolling restart":
			ann := v["podAnnotations"].ObjectValue()
			if got := ann[RestartedAtAnnotation].StringValue(); got != "2026-12-02T10:00:00Z" {
				t.Errorf("restart annotation %q", got)
			}
			ru := v["strategy"].ObjectValue()["rollingUpdate"].ObjectValue()
			if !ru["maxSurge"].IsNumber() || ru["maxSurge"].NumberValue() != 1 || ru["maxUnavailable"].NumberValue() != 0 {
				t.Errorf("strategy %v: counts are numbers in a Deployment's IntOrString", ru)
			}
		case "config push":
			ef := m.find(efType, "envoyfilter")
			cat, _ := stacks.Builtin()
			sc, _ := cat.MustGet("02-trigger")
			want := envoyfilter.Spec(sc.Lab(), envoyfilter.DefaultTarget)
			envoyfilter.WithPush(want, envoyfilter.DefaultTarget, 2)
			if err := envoyfilter.Validate(want); err != nil {
				t.Fatal(err)
			}
			if got := ef.Inputs["spec"].Mappable(); fmt.Sprint(normalize(got)) != fmt.Sprint(normalize(want)) {
				t.Errorf("push: registered spec\n%v\nwant\n%v", got, want)
			}
		}
	}
	// A percentage stays a string.
	v := gatewayValues(t, run(t, func(c *Config) { c.Rollout = Rollout{MaxSurge: "50%"} }))
	if ru := v["strategy"].ObjectValue()["rollingUpdate"].ObjectValue(); ru["maxSurge"].StringValue() != "50%" || ru.HasValue("maxUnavailable") {
		t.Errorf("strategy %v", ru)
	}
}
