package istioproof

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config/schema/collections"
)

// GatewayPort is the listener the lab's Gateway server (port 80) becomes: with a label-selector
// Gateway, Istio binds the server's port number on the gateway pod.
const GatewayPort = 80

// GatewayListener is its name in the pushed config.
var GatewayListener = fmt.Sprintf("0.0.0.0_%d", GatewayPort)

// IstioConfigs splits objects into what Istio's config store takes (networking.istio.io,
// security.istio.io) and Kubernetes objects (Services), as YAML streams.
func IstioConfigs(objs []map[string]any) (configs, kube string) {
	var c, k []map[string]any
	for _, o := range objs {
		if strings.Contains(fmt.Sprint(o["apiVersion"]), "istio.io/") {
			c = append(c, o)
		} else {
			k = append(k, o)
		}
	}
	return YAML(c...), YAML(k...)
}

// Validate runs Istio's own validation (what istiod's validating webhook applies) on every
// Istio config in a YAML stream. Errors are refusals; warnings (every EnvoyFilter gets one,
// about relying on Envoy's internals) are admitted.
func Validate(configs string) (errs, warnings []string) {
	cfgs, _, err := crd.ParseInputs(configs)
	if err != nil {
		return []string{err.Error()}, nil
	}
	for _, c := range cfgs {
		s, ok := collections.All.FindByGroupVersionAliasesKind(c.GroupVersionKind)
		if !ok {
			errs = append(errs, fmt.Sprintf("%v %s: not an Istio kind", c.GroupVersionKind, c.Name))
			continue
		}
		warn, err := s.ValidateConfig(c)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %s/%s: %v", c.GroupVersionKind.Kind, c.Namespace, c.Name, err))
		}
		if warn != nil {
			warnings = append(warnings, fmt.Sprintf("%s %s/%s: %v", c.GroupVersionKind.Kind, c.Namespace, c.Name, warn))
		}
	}
	return errs, warnings
}

// GatewayNode is the xDS node of a gateway pod with the given labels in namespace ns, as the
// pod's istio-agent would present it to istiod.
func GatewayNode(ns string, labels map[string]string) (id string, meta model.NodeMetadata) {
	return fmt.Sprintf("router~10.42.0.7~istio-ingressgateway-7d4f9c6b8-x2x4q.%s~%s.svc.cluster.local", ns, ns),
		model.NodeMetadata{Namespace: ns, Labels: labels, IstioVersion: Pinned, ClusterID: "Kubernetes"}
}

// FindListener returns the listener of a name.
func FindListener(ls []*listener.Listener, name string) *listener.Listener {
	for _, l := range ls {
		if l.GetName() == name {
			return l
		}
	}
	return nil
}

// HCM returns the HTTP connection manager of a listener's only HTTP filter chain.
func HCM(l *listener.Listener) (*hcm.HttpConnectionManager, error) {
	var found []*hcm.HttpConnectionManager
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			if f.GetName() != "envoy.filters.network.http_connection_manager" {
				continue
			}
			h := &hcm.HttpConnectionManager{}
			if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
				return nil, err
			}
			found = append(found, h)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("listener %s has %d HTTP connection managers, want 1", l.GetName(), len(found))
	}
	return found[0], nil
}

// JSON renders a proto as Envoy's JSON (field names as in the proto, which EnvoyFilter patches
// use), decoded into maps.
func JSON(m proto.Message) (map[string]any, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// ListenerJSON is a listener's own fields, without its filter chains.
func ListenerJSON(l *listener.Listener) (map[string]any, error) {
	c := proto.Clone(l).(*listener.Listener)
	c.FilterChains, c.DefaultFilterChain = nil, nil
	return JSON(c)
}

// Missing lists where got lacks what want sets: every field of want must be in got with the
// same value (numbers compared as numbers, {} matching any message that is present), and every
// list element of want must match one of got's.
func Missing(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v, want a message", path, got)}
		}
		var out []string
		keys := Names(w)
		for _, k := range keys {
			if k == "@type" {
				// The patch's own type is the message's; a nested Any's must match.
				if path != "" && g[k] != w[k] {
					out = append(out, fmt.Sprintf("%s.@type: %v, want %v", path, g[k], w[k]))
				}
				continue
			}
			v, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: absent, want %v", path, k, compact(w[k])))
				continue
			}
			out = append(out, Missing(w[k], v, path+"."+k)...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		var out []string
		for i, e := range w {
			matched := false
			for _, ge := range g {
				if len(Missing(e, ge, "")) == 0 {
					matched = true
					break
				}
			}
			if !matched {
				out = append(out, fmt.Sprintf("%s[%d]: no element matches %v", path, i, compact(e)))
			}
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, compact(got), compact(want))}
		}
		return nil
	}
}

// Leaves lists the dotted paths of the scalar and empty-message fields a patch sets.
func Leaves(v any, path string) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{path}
	}
	var out []string
	for _, k := range Names(m) {
		if k == "@type" {
			continue
		}
		out = append(out, Leaves(m[k], strings.TrimPrefix(path+"."+k, "."))...)
	}
	sort.Strings(out)
	return out
}

// At returns the value at a dotted path.
func At(v any, path string) (any, bool) {
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Patch is one config patch of an EnvoyFilter, as the program renders it.
type Patch struct {
	ApplyTo string
	// Value is what the patch merges: the HCM's fields (typed_config's) or the listener's.
	Value map[string]any
}

// Patches reads an EnvoyFilter's patches.
func Patches(ef map[string]any) ([]Patch, error) {
	spec, _ := ef["spec"].(map[string]any)
	list, _ := spec["configPatches"].([]any)
	var out []Patch
	for i, p := range list {
		pm, _ := p.(map[string]any)
		patch, _ := pm["patch"].(map[string]any)
		value, _ := patch["value"].(map[string]any)
		applyTo, _ := pm["applyTo"].(string)
		switch applyTo {
		case "NETWORK_FILTER":
			tc, _ := value["typed_config"].(map[string]any)
			out = append(out, Patch{applyTo, tc})
		case "LISTENER":
			out = append(out, Patch{applyTo, value})
		default:
			return nil, fmt.Errorf("configPatches[%d]: applyTo %q", i, applyTo)
		}
	}
	return out, nil
}
