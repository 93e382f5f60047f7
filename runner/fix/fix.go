// Package fix renders a lever (a set of Envoy knobs) in the configuration of the gateway it is
// for: Istio's classic gateway and its Gateway API gateway (EnvoyFilter), Envoy Gateway
// (ClientTrafficPolicy, and EnvoyPatchPolicy where no policy field exists), Contour
// (ContourConfiguration), kgateway, and plain Envoy (the listener's fields). A knob a dialect
// cannot express is named with the nearest thing it has, never dropped. The tests decode every
// rendering into the project's own Go API types where the module proxy serves them.
package fix

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// The dialects, as --gateway takes them.
const (
	Istio           = "istio"
	IstioGatewayAPI = "istio-gateway-api"
	EnvoyGateway    = "envoy-gateway"
	Kgateway        = "kgateway"
	Contour         = "contour"
	Envoy           = "envoy"
)

// Dialects lists them.
var Dialects = []string{Istio, IstioGatewayAPI, EnvoyGateway, Kgateway, Contour, Envoy}

// Gateway is the gateway a fix is for.
type Gateway struct {
	Dialect string
	// Namespace and Name are the Gateway resource's (Gateway API dialects) or, for Istio's
	// classic gateway, the pods' namespace; Selector their labels.
	Namespace, Name string
	Selector        map[string]string
	// Port is the port the Envoy listener binds (Istio's EnvoyFilter matches on it).
	Port int
	// Listener is the Gateway's listener (section) name, for patches that address one.
	Listener string
}

// Rendering is a lever in one dialect: the objects to apply (as YAML), the notes that go with
// them, and the knobs it cannot express with the nearest it has.
type Rendering struct {
	Dialect string           `json:"dialect"`
	YAML    string           `json:"yaml,omitempty"`
	Objects []map[string]any `json:"-"`
	Notes   []string         `json:"notes,omitempty"`
	Lacks   []string         `json:"lacks,omitempty"`
}

// Render puts the knobs set (path -> value, as the catalog's registry spells them) in the
// dialect of g.
func Render(g Gateway, set map[string]string) (*Rendering, error) {
	var k stacks.Knobs
	for _, path := range slices.Sorted(maps.Keys(set)) {
		spec, ok := stacks.Lookup(path)
		if !ok {
			return nil, fmt.Errorf("knob %s: no such knob (igwlab knobs lists them)", path)
		}
		if err := spec.Set(&k, set[path]); err != nil {
			return nil, fmt.Errorf("knob %s: %w", path, err)
		}
	}
	if g.Namespace == "" {
		// An Istio gateway's pods run in istio-ingress in the lab and in Istio's own install
		// docs; a Gateway API resource of another project has no such place, so "default".
		g.Namespace = envoyfilter.DefaultTarget.Namespace
		if g.Dialect == EnvoyGateway {
			g.Namespace = "default"
		}
	}
	if g.Port == 0 {
		g.Port = envoyfilter.DefaultTarget.Port
	}
	if len(g.Selector) == 0 {
		g.Selector = envoyfilter.DefaultTarget.Selector
	}
	r := &Rendering{Dialect: g.Dialect}
	var err error
	switch g.Dialect {
	case Istio, IstioGatewayAPI:
		err = r.istio(g, k)
	case EnvoyGateway:
		err = r.envoyGateway(g, set)
	case Contour:
		err = r.contour(set)
	case Kgateway:
		r.kgateway(set)
	case Envoy:
		err = r.envoy(k)
	default:
		return nil, fmt.Errorf("--gateway %q: allowed %s", g.Dialect, strings.Join(Dialects, ", "))
	}
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, o := range r.Objects {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	r.YAML = b.String()
	return r, nil
}

func (r *Rendering) istio(g Gateway, k stacks.Knobs) error {
	obj := envoyfilter.Object("igwlab-fix", stacks.Scenario{Name: "fix", Knobs: k}, envoyfilter.Target{Namespace: g.Namespace, Selector: g.Selector, Port: g.Port})
	spec := obj["spec"].(map[string]any)
	if g.Dialect == IstioGatewayAPI {
		if g.Name == "" {
			return fmt.Errorf("--gateway %s needs the Gateway's name (--gateway-name)", g.Dialect)
		}
		delete(spec, "workloadSelector")
		spec["targetRefs"] = []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": g.Name}}
		r.Notes = append(r.Notes, "targetRefs attaches the filter to this Gateway's pods alone from Istio 1.27 (pilot/pkg/model/policyattachment.go, WorkloadPolicyMatcher.ShouldAttachPolicy, matches the targetRef's name against the pods' gateway.networking.k8s.io/gateway-name label); Istio 1.26 applied it to every Gateway in the namespace (istio/istio#56417), so on 1.26 select the pods by that label in a workloadSelector instead (kuadrant-operator#2171 did so for 1.26.x); the filter lives in the Gateway's namespace")
	} else {
		r.Notes = append(r.Notes, "namespace and workloadSelector are the gateway pods'; portNumber is the port the gateway's Envoy listener binds (the Service's targetPort)")
	}
	if err := envoyfilter.Validate(spec); err != nil {
		return err
	}
	r.Objects = append(r.Objects, obj)
	return nil
}

// kgateway has no Go API module on the proxy this lab builds from: nothing rendered could be
// checked, so the fields are named for its own policy instead.
func (r *Rendering) kgateway(set map[string]string) {
	for _, v := range setKnobs(set) {
		r.Lacks = append(r.Lacks, fmt.Sprintf("%s %s: kgateway's API module (github.com/kgateway-dev/kgateway/v2) is not served by the Go module proxy, so igwlab renders nothing it cannot check against kgateway's types; set Envoy's field %s through kgateway's listener policy (kgateway-dev/kgateway#14559 added these knobs)", v.Path, v.Value, envoyField(v.Path)))
	}
}

// envoyField is a knob's Envoy field, by where it lives.
func envoyField(path string) string {
	what, field, _ := strings.Cut(path, ".")
	if what == "hcm" {
		return "HttpConnectionManager." + field
	}
	return "Listener." + field
}

// knobValue is one knob of a lever.
type knobValue struct{ Path, Value string }

// setKnobs are the lever's knobs in path order: only those it sets (the registry's Effective
// would add the release's defaults).
func setKnobs(set map[string]string) []knobValue {
	var out []knobValue
	for _, p := range slices.Sorted(maps.Keys(set)) {
		out = append(out, knobValue{p, set[p]})
	}
	return out
}

// WriteText prints the rendering under a heading: the objects, then the notes and what the
// dialect cannot express as YAML comments, so the block can be applied as it stands.
func (r *Rendering) WriteText(w io.Writer) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nIn your gateway's configuration (%s):\n%s", r.Dialect, r.YAML)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	for _, l := range r.Lacks {
		fmt.Fprintf(w, "# not expressible: %s\n", l)
	}
}
