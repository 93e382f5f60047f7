package dashboard

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestPromQLParses runs every panel query and every variable selector through Prometheus's
// own parser, both as Grafana stores it (variables unexpanded) and expanded with the defaults.
func TestPromQLParses(t *testing.T) {
	qs := Queries()
	if len(qs) < len(Panels) {
		t.Fatalf("%d queries for %d panels", len(qs), len(Panels))
	}
	for _, q := range qs {
		for _, expr := range []string{q.Expr, Expand(q.Expr, Defaults())} {
			e, err := parser.ParseExpr(expr)
			if err != nil {
				t.Errorf("panel %q: %v\n%s", q.Panel, err, expr)
				continue
			}
			if len(parser.ExtractSelectors(e)) == 0 {
				t.Errorf("panel %q selects no series: %s", q.Panel, expr)
			}
		}
		if strings.Contains(Expand(q.Expr, Defaults()), "$") && !strings.Contains(q.Expr, `"$1"`) {
			t.Errorf("panel %q keeps an unexpanded variable: %s", q.Panel, Expand(q.Expr, Defaults()))
		}
	}
	for _, v := range Variables {
		if v.Regex {
			continue
		}
		if _, err := parser.ParseMetricSelector(v.Selector); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
		}
	}
}

func TestPromQLParserRejectsBrokenQuery(t *testing.T) {
	// The parse test above is only worth something if the parser refuses what Prometheus would.
	for _, bad := range []string{`sum by (pod (x)`, `rate(x[1m)`, `histogram_quantile(0.99, sum by (le) (rate(x{a="b"}[1m]))`} {
		if _, err := parser.ParseExpr(bad); err == nil {
			t.Errorf("parser accepted %q", bad)
		}
	}
}

func TestExpandPrefersLongerNames(t *testing.T) {
	got := Expand(`{a="$pod", b="$podx"}`, map[string]string{"pod": "p", "podx": "q"})
	if got != `{a="p", b="q"}` {
		t.Errorf("Expand = %s", got)
	}
}
