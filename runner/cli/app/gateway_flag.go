package app

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/runner/fix"
)

// gatewayFlags name the gateway a recommended lever is rendered for.
type gatewayFlags struct {
	dialect, name, namespace, listener string
	port                               int
}

func (g *gatewayFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.dialect, "gateway", "", "render the recommended lever in this gateway's own configuration: "+strings.Join(fix.Dialects, ", ")+" (default: istio where the stats are Istio's, else envoy)")
	fs.StringVar(&g.name, "gateway-name", "", "with --gateway istio-gateway-api or envoy-gateway: the Gateway resource's name")
	fs.StringVar(&g.namespace, "gateway-namespace", "", "the namespace of the Gateway (or of the Istio gateway's pods); default istio-ingress for the Istio dialects, default for envoy-gateway")
	fs.StringVar(&g.listener, "gateway-listener", "", "with --gateway envoy-gateway: the Gateway listener (section) an EnvoyPatchPolicy patches (default http)")
	fs.IntVar(&g.port, "gateway-port", 0, "with --gateway istio: the port the gateway's Envoy listener binds, the Service's targetPort (default 80)")
}

// check refuses a dialect that does not exist, before anything runs.
func (g *gatewayFlags) check() error {
	if g.dialect != "" && !slices.Contains(fix.Dialects, g.dialect) {
		return Usagef("--gateway %q: allowed %s", g.dialect, strings.Join(fix.Dialects, ", "))
	}
	if (g.dialect == fix.IstioGatewayAPI || g.dialect == fix.EnvoyGateway) && g.name == "" {
		return Usagef("--gateway %s: needs --gateway-name, the Gateway resource the change attaches to", g.dialect)
	}
	if g.port < 0 || g.port > 65535 {
		return Usagef("--gateway-port %d: allowed 1..65535", g.port)
	}
	return nil
}

// render renders set for the gateway, in the dialect given or else def.
func (g *gatewayFlags) render(def string, set map[string]string) (*fix.Rendering, error) {
	d := g.dialect
	if d == "" {
		d = def
	}
	return fix.Render(fix.Gateway{Dialect: d, Namespace: g.namespace, Name: g.name, Listener: g.listener, Port: g.port}, set)
}
