package stats

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Envoy's stats reach Prometheus under two naming schemes. Envoy's own default tags
// (source/common/config/well_known_names.cc, use_all_default_tags) name the labels with an
// envoy_ prefix and take the worker out of a per-worker name into a label:
// envoy_listener_worker_downstream_cx_total{envoy_listener_address="0.0.0.0_10000",
// envoy_worker_id="3"}. Istio's bootstrap turns the default tags off and keeps its own, without
// the prefix, and leaves the worker in the name: envoy_listener_worker_3_downstream_cx_total
// {listener_address="0.0.0.0_80"} (tools/packaging/common/envoy_bootstrap.json). Envoy Gateway,
// Contour, Gloo, Emissary and Consul keep Envoy's defaults. Normalize reads both as one: the
// rest of the lab sees Istio's names.

// envoyTags are Envoy's default tag names and the names the lab reads them by.
var envoyTags = map[string]string{
	"envoy_http_conn_manager_prefix": "http_conn_manager_prefix",
	"envoy_listener_address":         "listener_address",
	"envoy_cluster_name":             "cluster_name",
}

// Normalize renames Envoy's default tags to Istio's and puts the worker of a per-worker
// series back into its name, in place. A page in Istio's names is left as it is.
func Normalize(fams map[string]*dto.MetricFamily) {
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if to, ok := envoyTags[lp.GetName()]; ok {
					lp.Name = proto.String(to)
				}
			}
		}
		rest, ok := strings.CutPrefix(name, "envoy_listener_worker_")
		if !ok || rest == "" || (rest[0] >= '0' && rest[0] <= '9') {
			continue
		}
		// envoy_listener_worker_<stat>{envoy_worker_id="N"}: one family per worker.
		kept := f.Metric[:0]
		for _, m := range f.GetMetric() {
			id, labels := "", m.Label[:0:0]
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "envoy_worker_id" {
					id = lp.GetValue()
					continue
				}
				labels = append(labels, lp)
			}
			if _, ok := workerID(id); !ok {
				kept = append(kept, m)
				continue
			}
			to := "envoy_listener_worker_" + id + "_" + rest
			wf := fams[to]
			if wf == nil {
				wf = &dto.MetricFamily{Name: proto.String(to), Help: f.Help, Type: f.Type}
				fams[to] = wf
			}
			m.Label = labels
			wf.Metric = append(wf.Metric, m)
		}
		if len(kept) == 0 {
			delete(fams, name)
		} else {
			f.Metric = kept
		}
	}
}
