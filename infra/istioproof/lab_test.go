package istioproof

import (
	"os"
	"sync"
	"testing"

	"istio.io/istio/pkg/log"
)

// TestMain keeps istiod's own logging to errors: the in-process control plane is chatty.
func TestMain(m *testing.M) {
	for _, s := range log.Scopes() {
		s.SetOutputLevel(log.ErrorLevel)
	}
	os.Exit(m.Run())
}

// The program's inputs and the rendered charts, loaded once for every test.
var (
	labOnce sync.Once
	lab     struct {
		in       *Inputs
		efs      map[string]map[string]any
		rendered map[string][]map[string]any // chart -> objects
		err      error
	}
)

func loadLab(t *testing.T) (*Inputs, map[string]map[string]any, map[string][]map[string]any) {
	t.Helper()
	labOnce.Do(func() {
		if lab.in, lab.err = LoadInputs(InputsFile); lab.err != nil {
			return
		}
		if lab.efs, lab.err = EnvoyFilters(EnvoyFilterDir); lab.err != nil {
			return
		}
		lab.rendered = map[string][]map[string]any{}
		for _, r := range lab.in.Releases {
			c, err := LoadChart(r.Chart, r.Version)
			if err != nil {
				lab.err = err
				return
			}
			m, err := Render(c, r)
			if err != nil {
				lab.err = err
				return
			}
			if lab.rendered[r.Chart], lab.err = Objects(m); lab.err != nil {
				return
			}
		}
	})
	if lab.err != nil {
		t.Fatal(lab.err)
	}
	return lab.in, lab.efs, lab.rendered
}

// gatewayPodLabels are the labels the gateway chart gives the gateway pods, with the program's
// values: the proxies Istio pushes the lab's config to carry exactly these.
func gatewayPodLabels(t *testing.T) (string, map[string]string) {
	t.Helper()
	in, _, rendered := loadLab(t)
	r, err := in.Release("gateway")
	if err != nil {
		t.Fatal(err)
	}
	d := Find(rendered["gateway"], "Deployment", r.Name)
	if d == nil {
		t.Fatalf("the gateway chart renders no Deployment %s", r.Name)
	}
	tmpl, _ := At(d, "spec.template.metadata.labels")
	m, _ := tmpl.(map[string]any)
	labels := map[string]string{}
	for k, v := range m {
		labels[k] = v.(string)
	}
	return r.Namespace, labels
}
