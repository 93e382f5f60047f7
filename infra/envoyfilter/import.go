package envoyfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"

	"github.com/igwlab/igwlab/stacks"
)

// A user's EnvoyFilter, read onto the lab's gateway: the knobs its patches set become the
// knobs in force, every field the lab does not model is named as not applied (never dropped in
// silence), and a patch that Istio would not apply to a gateway is refused with the reason.

// Imported is what a user's EnvoyFilter file sets on the lab's gateway.
type Imported struct {
	File string `json:"file" yaml:"file"`
	// Names are the EnvoyFilters' metadata.name, one per document.
	Names []string `json:"names" yaml:"names"`
	// Knobs are the knobs its patches set, in Envoy's names.
	Knobs stacks.Knobs `json:"-" yaml:"-"`
	// Sets lists them as path=value.
	Sets []string `json:"sets" yaml:"sets"`
	// NotApplied names each field and patch the lab does not model, with why.
	NotApplied []string `json:"not_applied,omitempty" yaml:"not_applied,omitempty"`
	// Notes say how a patch was read onto the lab's gateway (a port mapped onto its listener).
	Notes []string `json:"notes,omitempty" yaml:"notes,omitempty"`
}

// GatewayLabels are the labels of the lab's gateway pods a workloadSelector may name: the
// Istio gateway chart's app label (the release name) and the lab's istio label.
var GatewayLabels = map[string]string{"istio": "ingressgateway", "app": "istio-ingressgateway"}

// ReadFile reads a user's EnvoyFilter file onto the gateway t (its listener port).
func ReadFile(path string, t Target) (*Imported, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the EnvoyFilter: %w", err)
	}
	return Import(path, data, t)
}

// fileError is a problem in a user's file, named by the file and the field.
func fileError(file, field, format string, a ...any) error {
	if field == "" {
		return fmt.Errorf("%s: %s", file, fmt.Sprintf(format, a...))
	}
	return fmt.Errorf("%s: %s: %s", file, field, fmt.Sprintf(format, a...))
}

// Import reads the EnvoyFilter documents of a file onto the gateway t. Every document must be
// an EnvoyFilter that istio.io/api accepts, and every patch value one Envoy's protos accept.
func Import(file string, data []byte, t Target) (*Imported, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fileError(file, "", "empty: want an EnvoyFilter (apiVersion networking.istio.io/v1alpha3, kind EnvoyFilter)")
	}
	imp := &Imported{File: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	ports := map[int][]string{}
	var errs []error
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			if i == 0 {
				return nil, fileError(file, "", "holds no YAML document: want an EnvoyFilter")
			}
			break
		}
		if err != nil {
			return nil, fileError(file, "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if doc == nil {
			continue
		}
		where := ""
		if i > 0 {
			where = fmt.Sprintf("document %d: ", i+1)
		}
		if err := imp.document(file, where, doc, t, ports); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(ports) > 1 {
		var list []string
		for p, fields := range ports {
			list = append(list, fmt.Sprintf("%d (%s)", p, strings.Join(fields, ", ")))
		}
		sort.Strings(list)
		return nil, fileError(file, "match.listener", "the patches match the listeners of ports %s; the lab's gateway has one listener (port %d): give one file per port", strings.Join(list, ", "), t.Port)
	}
	for p, fields := range ports {
		if p != t.Port {
			imp.Notes = append(imp.Notes, fmt.Sprintf("%s match the listener of port %d: read onto the lab gateway's listener, port %d (0.0.0.0_%d)", strings.Join(fields, ", "), p, t.Port, t.Port))
		}
	}
	for _, kv := range imp.Knobs.Set() {
		imp.Sets = append(imp.Sets, kv.Path+"="+kv.Value)
	}
	return imp, nil
}

// document reads one EnvoyFilter.
func (imp *Imported) document(file, where string, doc map[string]any, t Target, ports map[int][]string) error {
	if k, _ := doc["kind"].(string); k != Kind {
		return fileError(file, where+"kind", "%q: want EnvoyFilter (apiVersion networking.istio.io/v1alpha3)", fmt.Sprint(doc["kind"]))
	}
	if v, _ := doc["apiVersion"].(string); v != APIVersion {
		return fileError(file, where+"apiVersion", "%q: want %s, the EnvoyFilter's API", fmt.Sprint(doc["apiVersion"]), APIVersion)
	}
	meta, _ := doc["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	imp.Names = append(imp.Names, name)
	spec, ok := doc["spec"].(map[string]any)
	if !ok {
		return fileError(file, where+"spec", "missing: an EnvoyFilter's patches are in spec.configPatches")
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return fileError(file, where+"spec", "%v", err)
	}
	var ef networkingv1alpha3.EnvoyFilter
	if err := strict.Unmarshal(raw, &ef); err != nil {
		return fileError(file, where+"spec", "does not match istio.io/api networking/v1alpha3 EnvoyFilter: %v", err)
	}
	if err := selects(ef.GetWorkloadSelector().GetLabels()); err != nil {
		return fileError(file, where+"spec.workloadSelector", "%v", err)
	}
	if len(ef.GetTargetRefs()) > 0 {
		return fileError(file, where+"spec.targetRefs", "names Gateway API resources; the lab's gateway is Istio's gateway chart (no Gateway API Gateway): use a workloadSelector")
	}
	patches, _ := spec["configPatches"].([]any)
	var errs []error
	for i, p := range ef.GetConfigPatches() {
		field := fmt.Sprintf("%sspec.configPatches[%d]", where, i)
		pm, _ := patches[i].(map[string]any)
		if err := imp.patch(file, field, p, pm, ports, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// selects says why a workloadSelector would not select the lab's gateway pods, or nil.
func selects(labels map[string]string) error {
	var off []string
	for k, v := range labels {
		if GatewayLabels[k] != v {
			off = append(off, k+"="+v)
		}
	}
	if len(off) == 0 {
		return nil
	}
	sort.Strings(off)
	return fmt.Errorf("%s does not select the lab's gateway pods (istio=ingressgateway, app=istio-ingressgateway): Istio would not apply the filter to them; select them by those labels (or drop the selector) to run it here",
		strings.Join(off, ", "))
}

// patch reads one configPatch: its match must reach a gateway, its value pass Envoy's protos,
// and its fields become knobs or are named as not applied.
func (imp *Imported) patch(file, field string, p *networkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch, pm map[string]any, ports map[int][]string, t Target) error {
	m := p.GetMatch()
	switch ctx := m.GetContext(); ctx {
	case networkingv1alpha3.EnvoyFilter_SIDECAR_INBOUND, networkingv1alpha3.EnvoyFilter_SIDECAR_OUTBOUND:
		return fileError(file, field+".match.context", "%s applies to sidecars: Istio never applies it to a gateway (use GATEWAY or ANY)", ctx)
	}
	if v := m.GetProxy().GetProxyVersion(); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			return fileError(file, field+".match.proxy.proxyVersion", "%q is not a regular expression: %v", v, err)
		}
		if !re.MatchString(t.Istio) {
			return fileError(file, field+".match.proxy.proxyVersion", "%q does not match the gateway's Istio %s: Istio would not apply the patch to it", v, t.Istio)
		}
	}
	value, _ := pm["patch"].(map[string]any)
	value, _ = value["value"].(map[string]any)
	unchecked, err := validateValue(p.GetApplyTo(), value)
	if err != nil {
		return fileError(file, field+".patch.value", "%v", err)
	}
	for _, u := range unchecked {
		imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: an extension of type %s, which igwlab's Envoy protos do not include (not checked, not applied)", field, u))
	}
	l := m.GetListener()
	if l != nil {
		if port := int(l.GetPortNumber()); port != 0 {
			ports[port] = append(ports[port], field)
		} else if n := l.GetName(); n != "" {
			if port := listenerPort(n); port != 0 {
				ports[port] = append(ports[port], field)
			}
		}
		if fc := l.GetFilterChain(); fc != nil && (fc.GetSni() != "" || fc.GetTransportProtocol() == "tls") {
			imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: matches a TLS filter chain (sni %q, transportProtocol %q); the lab's gateway listener is plain HTTP: not applied", field, fc.GetSni(), fc.GetTransportProtocol()))
			return nil
		}
	}
	op := p.GetPatch().GetOperation()
	switch applyTo := p.GetApplyTo(); {
	case applyTo == networkingv1alpha3.EnvoyFilter_NETWORK_FILTER:
		if f := l.GetFilterChain().GetFilter().GetName(); f != "" && f != HCMFilter && f != "envoy.http_connection_manager" {
			imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: patches the network filter %s, not the HTTP connection manager: not applied", field, f))
			return nil
		}
		if op != networkingv1alpha3.EnvoyFilter_Patch_MERGE && op != networkingv1alpha3.EnvoyFilter_Patch_REPLACE {
			imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: %s of a network filter: the lab models the connection manager's settings only (MERGE, REPLACE): not applied", field, op))
			return nil
		}
		if op == networkingv1alpha3.EnvoyFilter_Patch_REPLACE {
			imp.Notes = append(imp.Notes, field+": REPLACE of the connection manager: the lab applies the knobs it models from the new one, on top of Istio's")
		}
		tc, _ := value["typed_config"].(map[string]any)
		return imp.read(file, field+".patch.value.typed_config", tc, "hcm.", "")
	case applyTo == networkingv1alpha3.EnvoyFilter_LISTENER:
		if op != networkingv1alpha3.EnvoyFilter_Patch_MERGE {
			imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: %s of a listener: the lab models a MERGE into the gateway's listener only: not applied", field, op))
			return nil
		}
		return imp.read(file, field+".patch.value", value, "listener.", "")
	default:
		imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: applyTo %s: the lab models the gateway listener's and connection manager's settings only: not applied", field, applyTo))
	}
	return nil
}

var listenerPortRE = regexp.MustCompile(`_(\d+)$`)

// listenerPort is the port of a listener named as Istio names a gateway's (0.0.0.0_8080).
func listenerPort(name string) int {
	m := listenerPortRE.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	var p int
	fmt.Sscan(m[1], &p)
	return p
}

// read sets every knob in m, Envoy's JSON under the section prefix ("hcm." or "listener."), and
// names every other field as not applied. A knob's value out of Envoy's range is an error.
func (imp *Imported) read(file, field string, m map[string]any, prefix, path string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, key := range keys {
		if key == "@type" || path == "" && key == "name" && prefix == "hcm." {
			continue
		}
		full := prefix + path + key
		if spec, ok := stacks.Lookup(full); ok {
			if _, set := spec.Get(&imp.Knobs); set {
				imp.Notes = append(imp.Notes, full+" is set by more than one patch: the last one wins, as Istio applies patches in order")
			}
			if err := spec.SetEnvoy(&imp.Knobs, m[key]); err != nil {
				errs = append(errs, fileError(file, field+"."+path+key, "%v", err))
			}
			continue
		}
		if sub, ok := m[key].(map[string]any); ok && knobsUnder(full+".") {
			errs = append(errs, imp.read(file, field, sub, prefix, path+key+"."))
			continue
		}
		imp.NotApplied = append(imp.NotApplied, fmt.Sprintf("%s: %s (the lab does not model it)", full, shortJSON(m[key])))
	}
	return errors.Join(errs...)
}

// knobsUnder says whether a registry knob lives under the path prefix.
func knobsUnder(prefix string) bool {
	return slices.ContainsFunc(stacks.KnobPaths(), func(p string) bool { return strings.HasPrefix(p, prefix) })
}

// shortJSON renders a value compactly for a line of output.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if s := string(b); len(s) <= 80 {
		return s
	}
	return string(b[:77]) + "..."
}
