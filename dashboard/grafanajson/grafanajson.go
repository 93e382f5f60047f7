// Package grafanajson renders the lab's dashboard (package dashboard's panels and variables)
// as Grafana JSON with Grafana's typed builders. Only the lab's Pulumi program needs it.
package grafanajson

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	grafana "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/igwlab/igwlab/dashboard"
)

// JSON renders the dashboard with Grafana's typed builders, so every field is one Grafana's
// schema has and the SDK's validation runs before the JSON leaves here. The SDK writes schema
// version 42; Grafana's migrations from 39 (what this dashboard used to say) to 42 rewrite a
// non-string refresh, timepicker.time_options and hideFrom overrides, none of which it sets.
func JSON() ([]byte, error) {
	b := grafana.NewDashboardBuilder(dashboard.Title).Uid(dashboard.UID).
		Description("Thread concentration on an Istio ingress gateway: distribution across pods and workers, rotation, flow control.").
		Tags([]string{"istio", "envoy", "igwlab"}).
		Timezone(common.TimeZoneBrowser).Editable().
		Refresh("5s").Time("now-15m", "now").
		WithVariable(grafana.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus").
			Current(option("Prometheus", "prometheus")))
	for _, v := range dashboard.Variables {
		b.WithVariable(variable(v))
	}
	for i, p := range dashboard.Panels {
		b.WithPanel(panel(i, p))
	}
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", dashboard.UID, err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// source is the datasource variable: every panel, query and query variable asks whichever
// Prometheus the viewer picked, so one dashboard serves the real lab and the local pool.
func source() common.DataSourceRef {
	typ, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// panel is one row of the table as a time series, half the grid wide, two to a row; the
// builder places each after the one before.
func panel(i int, p dashboard.Panel) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().Id(uint32(i + 1)).Title(p.Title).Description(p.Description).
		Datasource(source()).Unit(p.Unit).Height(8).Span(12).
		// The SDK starts from Go zero values where Grafana has defaults of its own: showLegend
		// false would hide the legend and an empty tooltip mode is none of Grafana's, so both
		// say Grafana's defaults out loud.
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle).Sort(common.SortOrderNone))
	for j, t := range p.Targets {
		b.WithTarget(prometheus.NewDataqueryBuilder().Datasource(source()).RefId(string(rune('A' + j))).
			Expr(t.Expr).LegendFormat(t.Legend))
	}
	return b
}

// variable is a free-text regex over pod names, or a label_values query that Grafana runs again
// whenever the time range changes, so a newly deployed gateway shows up without a reload.
func variable(v dashboard.Variable) cog.Builder[grafana.VariableModel] {
	cur := option(v.Default, v.Default)
	if v.Regex {
		return grafana.NewTextBoxVariableBuilder(v.Name).Label(v.Label).
			DefaultValue(grafana.StringOrMap{String: &v.Default}).Current(cur)
	}
	// The SDK has no type for the Prometheus data source's variable query, only a string or a
	// map; the map is the form Grafana saves (a bare string is the legacy form it migrates).
	query := map[string]any{"query": "label_values(" + v.Selector + ", " + v.LabelName + ")", "refId": "var-" + v.Name}
	return grafana.NewQueryVariableBuilder(v.Name).Label(v.Label).Datasource(source()).
		Query(grafana.StringOrMap{Map: query}).Refresh(grafana.VariableRefreshOnTimeRangeChanged).
		Current(cur).IncludeAll(false).Multi(false)
}

func option(text, value string) grafana.VariableOption {
	return grafana.VariableOption{Text: grafana.StringOrArrayOfString{String: &text},
		Value: grafana.StringOrArrayOfString{String: &value}}
}
