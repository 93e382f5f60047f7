package diagnose

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/igwlab/igwlab/runner/stats"
)

// PromSource reads the gateway pods' Envoy stats from a Prometheus server over a time range,
// with client_golang's API client. Each pod's series become two readings, one at the start of
// the range (counters at zero) and one at its end (counters at their increase, resets
// included), so the rest of diagnose reads them as it reads an admin endpoint's.
type PromSource struct {
	URL        string
	Start, End time.Time
	// PodLabel is the label naming the pod (`pod`, as kube-prometheus-stack's PodMonitors set it).
	PodLabel string
	// PodRegex selects the gateway pods by that label.
	PodRegex string
	// Timeout bounds each query (10 s when zero).
	Timeout time.Duration
	// Pick names the traffic's connection manager and listener instead of discovering them.
	Pick stats.Pick
}

// gatewayFamilies are the Envoy families diagnose reads, under Istio's names and Envoy's
// default tags alike (stats.Normalize reads both).
const gatewayFamilies = `envoy_http_downstream_(cx_total|cx_http2_total|cx_active|rq_total|rq_active|cx_max_requests_reached|cx_max_duration_reached|cx_drain_close|cx_destroy|cx_protocol_error|cx_length_ms_bucket|rq_max_duration_reached|cx_tx_bytes_total)` +
	`|envoy_listener_worker_([0-9]+_)?downstream_cx_(total|active)|envoy_listener_downstream_cx_(total|active)|envoy_server_(concurrency|uptime)|envoy_listener_http_downstream_rq_completed` +
	// The workers' own signals (stats.WorkerLoop): watchdog misses, dispatcher histograms.
	`|envoy_server_(worker_[0-9]+_)?watchdog_(mega_)?miss|envoy_listener_manager_(worker_[0-9]+_)?dispatcher_(loop_duration|poll_delay)_us_(bucket|sum)`

// Window queries the range.
func (p PromSource) Window(ctx context.Context) (*Window, error) {
	if p.Timeout == 0 {
		p.Timeout = 10 * time.Second
	}
	if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want Prometheus' base URL, such as http://127.0.0.1:9090", p.URL)
	}
	if !p.End.After(p.Start) {
		return nil, fmt.Errorf("time range %s .. %s is empty: --start must be before --end", p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339))
	}
	c, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %w", p.URL, err)
	}
	prom := v1.NewAPI(c)
	span := p.End.Sub(p.Start)
	step := rangeStep(span)
	sel := fmt.Sprintf(`{__name__=~%q, %s=~%q}`, gatewayFamilies, p.PodLabel, p.PodRegex)
	qctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	val, _, err := prom.QueryRange(qctx, sel, v1.Range{Start: p.Start, End: p.End, Step: step})
	if err != nil {
		return nil, p.queryError(err)
	}
	matrix, _ := val.(model.Matrix)
	pre, post, missingPod, covered := p.readings(matrix)
	if len(post) == 0 {
		what := fmt.Sprintf("Prometheus at %s has no gateway series (envoy_http_downstream_cx_total and friends) with %s=~%q between %s and %s",
			p.URL, p.PodLabel, p.PodRegex, p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339))
		if missingPod > 0 {
			what += fmt.Sprintf("; %d series have no %q label: pass the label that names the pod", missingPod, p.PodLabel)
		}
		return nil, errors.New(what + ": check that it scrapes the gateway pods' /stats/prometheus (a PodMonitor), that their proxyStatsMatcher includes http.*downstream_cx.* (Istio's default drops it), and the pod regex")
	}
	w, err := windowFrom(fmt.Sprintf("Prometheus %s, %s to %s", p.URL, p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339)), pre, post, span, p.Pick)
	if err != nil {
		return nil, err
	}
	w.Start, w.End, w.Covered = p.Start, p.End, covered
	w.Missing = append(w.Missing, "no /config_dump through Prometheus: what is in force is judged from the drain counters")
	w.CPUSeconds, err = p.cpu(ctx, prom, span)
	if err != nil || len(w.CPUSeconds) == 0 {
		w.Missing = append(w.Missing, fmt.Sprintf("container CPU per pod (container_cpu_usage_seconds_total from cAdvisor, container=\"istio-proxy\") is not in this Prometheus%s: busy workers cannot be judged", errText(err)))
	}
	if w.CPU, err = p.cfs(ctx, prom, span, w.CPUSeconds); err != nil {
		w.Missing = append(w.Missing, "the CFS counters (container_cpu_cfs_periods_total, container_cpu_cfs_throttled_periods_total): "+err.Error())
	}
	return w, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

func (p PromSource) queryError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) || strings.Contains(err.Error(), "connection refused") || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot query Prometheus at %s: %w (check --prometheus: the server's base URL, reachable from here)", p.URL, err)
	}
	return fmt.Errorf("Prometheus at %s refused the query: %w", p.URL, err)
}

// readings turns the range into two readings per pod. It also counts series without the pod
// label, and says how much time the readings cover: a counter's increase runs from its first
// sample in the range to its last, at the query's step, not from the range's start to its end.
func (p PromSource) readings(m model.Matrix) (pre, post []stats.Snapshot, missingPod int, covered time.Duration) {
	type lines struct{ pre, post map[string][]string }
	byPod := map[string]*lines{}
	for _, s := range m {
		pod := string(s.Metric[model.LabelName(p.PodLabel)])
		if pod == "" {
			missingPod++
			continue
		}
		if len(s.Values) == 0 {
			continue
		}
		covered = max(covered, s.Values[len(s.Values)-1].Timestamp.Time().Sub(s.Values[0].Timestamp.Time()))
		l := byPod[pod]
		if l == nil {
			l = &lines{pre: map[string][]string{}, post: map[string][]string{}}
			byPod[pod] = l
		}
		name := string(s.Metric[model.MetricNameLabel])
		family, kind := familyOf(name)
		first, last := float64(s.Values[0].Value), float64(s.Values[len(s.Values)-1].Value)
		if kind != "gauge" {
			first, last = 0, increase(s.Values)
		}
		lbl := labelText(s.Metric)
		l.pre[family] = append(l.pre[family], fmt.Sprintf("%s%s %s", name, lbl, num(first)))
		l.post[family] = append(l.post[family], fmt.Sprintf("%s%s %s", name, lbl, num(last)))
		if strings.HasSuffix(name, "_bucket") && string(s.Metric["le"]) == "+Inf" {
			// The text format wants a histogram's count: the +Inf bucket.
			count := strings.TrimSuffix(name, "_bucket") + "_count"
			nolabel := labelText(without(s.Metric, "le"))
			l.pre[family] = append(l.pre[family], fmt.Sprintf("%s%s %s", count, nolabel, num(first)))
			l.post[family] = append(l.post[family], fmt.Sprintf("%s%s %s", count, nolabel, num(last)))
		}
	}
	pods := make([]string, 0, len(byPod))
	for pod := range byPod {
		pods = append(pods, pod)
	}
	sort.Strings(pods)
	for _, pod := range pods {
		a, errA := stats.ParseSnapshot(pod, p.Start, exposition(byPod[pod].pre))
		b, errB := stats.ParseSnapshot(pod, p.End, exposition(byPod[pod].post))
		if errA != nil || errB != nil {
			continue
		}
		pre, post = append(pre, a), append(post, b)
	}
	return pre, post, missingPod, covered
}

// familyOf names a series' family and its kind: gauges are the _active ones and concurrency;
// _bucket series belong to a histogram; the rest are counters.
func familyOf(name string) (string, string) {
	switch {
	case strings.HasSuffix(name, "_bucket"):
		return strings.TrimSuffix(name, "_bucket"), "histogram"
	case strings.HasSuffix(name, "_us_sum"): // a dispatcher histogram's sum
		return strings.TrimSuffix(name, "_sum"), "histogram"
	case strings.HasSuffix(name, "_active") || name == "envoy_server_concurrency":
		return name, "gauge"
	}
	return name, "counter"
}

func exposition(families map[string][]string) []byte {
	names := make([]string, 0, len(families))
	for f := range families {
		names = append(names, f)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, f := range names {
		_, kind := familyOf(f)
		for _, l := range families[f] { // a bucket line makes the family a histogram
			if strings.HasPrefix(l, f+"_bucket") {
				kind = "histogram"
				break
			}
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n", f, kind)
		for _, l := range families[f] {
			b.WriteString(l + "\n")
		}
	}
	return []byte(b.String())
}

// increase is a counter's growth over the samples, counting a drop as a restart from zero.
func increase(vs []model.SamplePair) float64 {
	var inc float64
	for i := 1; i < len(vs); i++ {
		a, b := float64(vs[i-1].Value), float64(vs[i].Value)
		if b < a {
			inc += b
		} else {
			inc += b - a
		}
	}
	return inc
}

func without(m model.Metric, name model.LabelName) model.Metric {
	out := model.Metric{}
	for k, v := range m {
		if k != name {
			out[k] = v
		}
	}
	return out
}

func labelText(m model.Metric) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != model.MetricNameLabel {
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, string(m[model.LabelName(k)]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func num(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "0"
	}
	return fmt.Sprintf("%g", v)
}

// cpu is each pod's proxy CPU over the span, from cAdvisor's container_cpu_usage_seconds_total.
func (p PromSource) cpu(ctx context.Context, prom v1.API, span time.Duration) (map[string]float64, error) {
	q := fmt.Sprintf(`sum by (%s) (increase(container_cpu_usage_seconds_total{%s=~%q, container="istio-proxy"}[%ds]))`,
		p.PodLabel, p.PodLabel, p.PodRegex, int(span.Seconds()))
	qctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	val, _, err := prom.Query(qctx, q, p.End)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	if vec, ok := val.(model.Vector); ok {
		for _, s := range vec {
			out[string(s.Metric[model.LabelName(p.PodLabel)])] = float64(s.Value)
		}
	}
	return out, nil
}

// cfs is each pod's proxy container over the span as cAdvisor counts it: its CPU limit
// (container_spec_cpu_quota over container_spec_cpu_period at the end) and its CFS periods,
// throttled periods and throttled time (their increase). cAdvisor exports them only for a
// container with a quota: a pod without one is absent.
func (p PromSource) cfs(ctx context.Context, prom v1.API, span time.Duration, used map[string]float64) (map[string]stats.CPU, error) {
	sel := fmt.Sprintf(`{%s=~%q, container="istio-proxy"}`, p.PodLabel, p.PodRegex)
	by := "sum by (" + p.PodLabel + ") "
	queries := []struct {
		q   string
		set func(*stats.CPU, float64)
	}{
		{by + "(container_spec_cpu_quota" + sel + ") / " + by + "(container_spec_cpu_period" + sel + ")", func(c *stats.CPU, v float64) { c.LimitCores = v }},
		{fmt.Sprintf("%s(increase(container_cpu_cfs_periods_total%s[%ds]))", by, sel, int(span.Seconds())), func(c *stats.CPU, v float64) { c.Periods, c.Limited = v, true }},
		{fmt.Sprintf("%s(increase(container_cpu_cfs_throttled_periods_total%s[%ds]))", by, sel, int(span.Seconds())), func(c *stats.CPU, v float64) { c.Throttled = v }},
		{fmt.Sprintf("%s(increase(container_cpu_cfs_throttled_seconds_total%s[%ds]))", by, sel, int(span.Seconds())), func(c *stats.CPU, v float64) { c.ThrottledS = v }},
	}
	out := map[string]stats.CPU{}
	for _, q := range queries {
		qctx, cancel := context.WithTimeout(ctx, p.Timeout)
		val, _, err := prom.Query(qctx, q.q, p.End)
		cancel()
		if err != nil {
			return nil, err
		}
		vec, _ := val.(model.Vector)
		for _, smp := range vec {
			pod := string(smp.Metric[model.LabelName(p.PodLabel)])
			c := out[pod]
			c.Pod = pod
			q.set(&c, float64(smp.Value))
			out[pod] = c
		}
	}
	for pod, c := range out {
		c.UsageS = used[pod]
		out[pod] = c
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// rangeStep is the step of a range query over span: 120 points, and no coarser than a second
// for short windows. At a 5 s step a window of a few seconds has one or two points, and a
// series born inside it (a ztunnel's source side appears with its first tunnel) has only one,
// so its increase over the window reads 0; a step finer than the scrape interval only repeats
// samples.
func rangeStep(span time.Duration) time.Duration {
	return max(time.Second, span/120)
}
