package infra

import (
	"crypto/rand"
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v3"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/dashboard"
	"github.com/igwlab/igwlab/dashboard/grafanajson"
)

// MonitoringArgs configure monitoring.
type MonitoringArgs struct {
	ChartVersion string
	Install      bool
	Upstream     Upstream
	// GrafanaPassword is igwlab:grafanaPassword (a secret); unset, the stack's own random one
	// (grafanaAdmin).
	GrafanaPassword    pulumi.StringOutput
	GrafanaPasswordSet bool
	// Checks bind the live-targets check to each PodMonitor when the chart is installed (nil:
	// off); the waypoint's only when the scenario has one (Waypoint), since it has no pods else.
	Checks   *Checks
	Waypoint bool
	// Sources are what each PodMonitor's pods come from (monitor name to the release or
	// component that makes them): a monitor, and so its live-targets check, waits for them, so
	// that on a first install its minutes of patience start once the pods exist, not while
	// Istio's releases are still installing one after another and pulling their images.
	Sources map[string]pulumi.Resource
}

// Monitoring is kube-prometheus-stack trimmed for the lab, PodMonitors for the gateway, the
// waypoint and ztunnel, and the dashboard as a ConfigMap Grafana's sidecar loads.
type Monitoring struct {
	pulumi.ResourceState
	Namespace   *corev1.Namespace
	Stack       *helm.Release
	PodMonitors []*apiextensions.CustomResource
	Dashboard   *corev1.ConfigMap
	// GrafanaAdmin is the Secret Grafana's admin login comes from.
	GrafanaAdmin *corev1.Secret
}

// NewMonitoring installs monitoring.
func NewMonitoring(ctx *pulumi.Context, name string, args *MonitoringArgs, opts ...pulumi.ResourceOption) (*Monitoring, error) {
	c := &Monitoring{}
	if err := ctx.RegisterComponentResource(componentType("Monitoring"), name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.Namespace, err = corev1.NewNamespace(ctx, "monitoring-ns", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(MonitorNamespace),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
	}, child(c, opts)...)
	if err != nil {
		return nil, err
	}
	if c.GrafanaAdmin, err = grafanaAdmin(ctx, args, child(c, opts, dependsOn(c.Namespace))); err != nil {
		return nil, err
	}
	if args.Install {
		values := pulumi.Map{
			"alertmanager":          pulumi.Map{"enabled": pulumi.Bool(false)},
			"nodeExporter":          pulumi.Map{"enabled": pulumi.Bool(false)},
			"kubeStateMetrics":      pulumi.Map{"enabled": pulumi.Bool(false)},
			"defaultRules":          pulumi.Map{"create": pulumi.Bool(false)},
			"kubeEtcd":              pulumi.Map{"enabled": pulumi.Bool(false)}, // k3s embeds these; nothing to scrape
			"kubeControllerManager": pulumi.Map{"enabled": pulumi.Bool(false)},
			"kubeScheduler":         pulumi.Map{"enabled": pulumi.Bool(false)},
			"kubeProxy":             pulumi.Map{"enabled": pulumi.Bool(false)},
			// Its certificate Secret comes from hook Jobs; the lab does without the webhook. The
			// operator watches its own namespace only: on a cluster of the user's it must not
			// reconcile the Prometheus objects of another team's operator.
			"prometheusOperator": pulumi.Map{"admissionWebhooks": pulumi.Map{"enabled": pulumi.Bool(false)},
				"tls":        pulumi.Map{"enabled": pulumi.Bool(false)},
				"namespaces": pulumi.Map{"releaseNamespace": pulumi.Bool(true)}},
			"prometheus": pulumi.Map{"prometheusSpec": pulumi.Map{
				// The lab's own PodMonitors, and only those: the chart's {} with
				// podMonitorSelectorNilUsesHelmValues false would select every PodMonitor in
				// every namespace of the cluster. The ServiceMonitors stay the chart's own
				// (release-labelled: the kubelet's cAdvisor among them).
				"podMonitorSelectorNilUsesHelmValues": pulumi.Bool(false),
				"podMonitorSelector":                  pulumi.Map{"matchLabels": pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
				"podMonitorNamespaceSelector":         pulumi.Map{"matchLabels": pulumi.StringMap{"kubernetes.io/metadata.name": pulumi.String(MonitorNamespace)}},
				"scrapeInterval":                      pulumi.String("5s"),
				"retention":                           pulumi.String("2d"),
			}},
			"grafana": pulumi.Map{
				// The admin login from the lab's Secret (grafanaAdmin): kube-prometheus-stack 79 and
				// later no longer default the password, and one in the values would sit in the
				// release's state in the clear.
				"admin":                    pulumi.Map{"existingSecret": c.GrafanaAdmin.Metadata.Name().Elem()},
				"defaultDashboardsEnabled": pulumi.Bool(false),
				"grafana.ini":              pulumi.Map{"users": pulumi.Map{"default_theme": pulumi.String("light")}},
				"sidecar": pulumi.Map{"dashboards": pulumi.Map{"enabled": pulumi.Bool(true), "label": pulumi.String("grafana_dashboard"),
					"labelValue": pulumi.String("1"), "searchNamespace": pulumi.String("ALL")}},
			},
		}
		src, repo := args.Upstream.chart(PromChart, PromChartRepo)
		c.Stack, err = helm.NewRelease(ctx, "kube-prom-stack", &helm.ReleaseArgs{
			Name: pulumi.String("kube-prom-stack"), Chart: src, Version: pulumi.String(args.ChartVersion),
			Namespace:      c.Namespace.Metadata.Name().Elem(),
			RepositoryOpts: repo, Values: values, Timeout: pulumi.Int(600),
		}, child(c, opts, dependsOn(c.Namespace))...)
		if err != nil {
			return nil, err
		}
	}
	monitors := []struct {
		name, ns, port, path string
		selector             map[string]any
	}{
		{"igw-envoy", GatewayNamespace, "http-envoy-prom", "/stats/prometheus", map[string]any{"istio": "ingressgateway"}},
		{"waypoint-envoy", BackendNamespace, "http-envoy-prom", "/stats/prometheus", map[string]any{"gateway.networking.k8s.io/gateway-name": WaypointName}},
		{"ztunnel", IstioNamespace, "ztunnel-stats", "/metrics", map[string]any{"app": "ztunnel"}},
	}
	for _, m := range monitors {
		// The monitors live with Prometheus and select pods in the namespaces they watch, so none
		// depends on a namespace another component owns (istio-system comes with Istio's charts).
		check, err := monitorCheck(args, m.name)
		if err != nil {
			return nil, err
		}
		pm, err := customResource(ctx, m.name, "monitoring.coreos.com/v1", "PodMonitor", MonitorNamespace, map[string]any{
			"selector":            map[string]any{"matchLabels": m.selector},
			"namespaceSelector":   map[string]any{"matchNames": []any{m.ns}},
			"podMetricsEndpoints": []any{map[string]any{"port": m.port, "path": m.path, "interval": "5s"}},
		}, child(c, opts, dependsOn(c.Stack, c.Namespace, args.Sources[m.name]), check))
		if err != nil {
			return nil, err
		}
		c.PodMonitors = append(c.PodMonitors, pm)
	}
	board, err := grafanajson.JSON()
	if err != nil {
		return nil, err
	}
	c.Dashboard, err = corev1.NewConfigMap(ctx, "dashboard", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("igw-thread-concentration-dashboard"), Namespace: pulumi.String(MonitorNamespace),
			Labels: pulumi.StringMap{"grafana_dashboard": pulumi.String("1"), LabPartOf: pulumi.String(LabName)}},
		Data: pulumi.StringMap{dashboard.UID + ".json": pulumi.String(string(board))},
	}, child(c, opts, dependsOn(c.Namespace))...)
	if err != nil {
		return nil, err
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"namespace": pulumi.String(MonitorNamespace),
		"dashboard": pulumi.String(dashboard.UID), "grafanaAdminSecret": pulumi.String(GrafanaAdminSecret)})
}

// GrafanaAdminSecret holds Grafana's admin login (keys admin-user and admin-password, the
// Grafana chart's admin.userKey and admin.passwordKey defaults).
const GrafanaAdminSecret = "igwlab-grafana-admin"

// grafanaAdmin is the Secret Grafana's admin login comes from: igwlab:grafanaPassword when the
// stack sets one, else a password drawn for this stack on its first up and kept from then on:
// changes to its stringData, and to the data the Kubernetes provider makes of it, are ignored,
// so each later run's new draw never reaches the cluster. It lives in the cluster and,
// encrypted, in the stack's state: never in a file of the repository.
func grafanaAdmin(ctx *pulumi.Context, args *MonitoringArgs, opts []pulumi.ResourceOption) (*corev1.Secret, error) {
	password := args.GrafanaPassword
	if !args.GrafanaPasswordSet {
		drawn, err := randomPassword()
		if err != nil {
			return nil, err
		}
		password = pulumi.ToSecret(pulumi.String(drawn)).(pulumi.StringOutput)
		opts = append(opts, pulumi.IgnoreChanges([]string{"stringData", "data"}))
	}
	return corev1.NewSecret(ctx, "grafana-admin", &corev1.SecretArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(GrafanaAdminSecret), Namespace: pulumi.String(MonitorNamespace),
			Labels: pulumi.StringMap{LabPartOf: pulumi.String(LabName)}},
		StringData: pulumi.StringMap{"admin-user": pulumi.String("admin"), "admin-password": password},
	}, opts...)
}

// randomPassword is 24 characters of a 56-letter alphabet from crypto/rand (over 130 bits).
func randomPassword() (string, error) {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing Grafana's password: %w", err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// monitorCheck is the check of one PodMonitor, or no option when there is nothing to check.
func monitorCheck(args *MonitoringArgs, monitor string) (pulumi.ResourceOption, error) {
	if !args.Install || (monitor == "waypoint-envoy" && !args.Waypoint) {
		return pulumi.Composite(), nil
	}
	check, err := args.Checks.Monitoring(monitor)
	return optional(check), err
}
