package diagnose

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/igwlab/igwlab/runner/stats"
)

// ztunnelFamilies are what diagnose reads of ztunnel through Prometheus: the connections it
// proxied as the source's side (istio_tcp_connections_*_total, reporter="source") and its
// data-plane threads' busy time (tokio's collector, ztunnel 1.30 and later), and the lab's
// HBONE counts where the local pool exports them.
const ztunnelFamilies = `istio_tcp_connections_(opened|closed)_total|tokio_worker_total_busy_duration_seconds(_total)?|igwlab_ztunnel_hbone_connections_(opened_total|active)`

// PromZtunnels reads the ztunnel pods (podLabel=~podRegex) over [start, end] from Prometheus:
// each pod's counters as their increase over the range, its gauges and open tunnels at the
// range's end.
func PromZtunnels(ctx context.Context, url string, start, end time.Time, podLabel, podRegex string, timeout time.Duration) (*ZtunnelWindow, error) {
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %w", url, err)
	}
	step := rangeStep(end.Sub(start))
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	val, _, err := v1.NewAPI(c).QueryRange(qctx, fmt.Sprintf(`{__name__=~%q, %s=~%q}`, ztunnelFamilies, podLabel, podRegex),
		v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, PromSource{URL: url}.queryError(err)
	}
	m, _ := val.(model.Matrix)
	type acc struct {
		z              stats.Ztunnel
		busy           map[int]float64
		opened, closed float64 // the counters' last values, for the tunnels still open
	}
	byPod := map[string]*acc{}
	var covered time.Duration
	for _, s := range m {
		pod := string(s.Metric[model.LabelName(podLabel)])
		if pod == "" || len(s.Values) == 0 {
			continue
		}
		covered = max(covered, s.Values[len(s.Values)-1].Timestamp.Time().Sub(s.Values[0].Timestamp.Time()))
		a := byPod[pod]
		if a == nil {
			a = &acc{z: stats.Ztunnel{Name: pod}, busy: map[int]float64{}}
			byPod[pod] = a
		}
		name, last := string(s.Metric[model.MetricNameLabel]), float64(s.Values[len(s.Values)-1].Value)
		src := s.Metric["reporter"] == "source"
		switch {
		case strings.HasPrefix(name, "tokio_worker_total_busy_duration_seconds"):
			if w, err := strconv.Atoi(string(s.Metric["worker"])); err == nil && w >= 0 && w < 1024 {
				a.busy[w] += increase(s.Values)
			}
		case name == "istio_tcp_connections_opened_total" && src:
			a.z.Tunnels += increase(s.Values)
			a.opened += last
		case name == "istio_tcp_connections_closed_total" && src:
			a.closed += last
		case name == stats.ZtunnelHBONEOpened:
			a.z.HBONEOpened += increase(s.Values)
		case name == stats.ZtunnelHBONEActive:
			a.z.HBONEActive += last
		}
	}
	if len(byPod) == 0 {
		return nil, fmt.Errorf("Prometheus at %s has no ztunnel series (istio_tcp_connections_opened_total, tokio_worker_total_busy_duration_seconds) with %s=~%q between %s and %s: check that it scrapes ztunnel's :15020/metrics and the pod regex",
			url, podLabel, podRegex, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	w := &ZtunnelWindow{Span: covered}
	pods := make([]string, 0, len(byPod))
	for p := range byPod {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, p := range pods {
		a := byPod[p]
		a.z.TunnelsOpen = a.opened - a.closed
		pre := stats.Ztunnel{Name: p}
		if n := len(a.busy); n > 0 {
			top := 0
			for k := range a.busy {
				top = max(top, k)
			}
			a.z.ThreadBusyS, pre.ThreadBusyS = make([]float64, top+1), make([]float64, top+1)
			for k, v := range a.busy {
				a.z.ThreadBusyS[k] = v
			}
		}
		w.Pre, w.Post = append(w.Pre, pre), append(w.Post, a.z)
	}
	return w, nil
}
