package infra

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Names of the after-update checks, as Pulumi shows them ("after hook ... failed").
const (
	ScenarioCheck = "igwlab-scenario-in-effect"
	GatewayCheck  = "igwlab-gateway-workers-and-stats"
	// MonitoringCheck is followed by the PodMonitor's name: one check per monitor.
	MonitoringCheck = "igwlab-monitoring-targets-"
	WaypointCheck   = "igwlab-waypoint-carries-traffic"
)

// WaypointProbes is how many requests the waypoint check sends through the gateway per round.
const WaypointProbes = 20

// WaypointStartup is what the waypoint check allows beyond the check timeout when it finds
// the waypoint's pods through the Kubernetes API: istiod creates the waypoint's Deployment
// only once the Gateway exists, and its pods must start before they count anything.
const WaypointStartup = time.Minute

// Checks are the lab's test hooks: Pulumi resource hooks that run after a resource they are
// bound to is created or updated, read every gateway pod's Envoy admin through the same code
// the runner measures with (runner/inforce), print what they saw, and fail the update (the
// resource's new state is kept) when what was applied did not take effect. A nil *Checks is
// switched off: render mode, igwlab:verify false.
type Checks struct {
	ctx     *pulumi.Context
	cfg     Config
	timeout time.Duration
	// pool opens the gateway pods' admins for one check and returns how to close them.
	pool func(context.Context) (inforce.Pool, func(), error)
	// prometheus opens Prometheus's HTTP API for one check, likewise.
	prometheus func(context.Context) (func(context.Context, string) ([]byte, error), func(), error)
	// want is the pod count every check expects.
	want int
	// waypoints opens the waypoint pods' admins, and send sends one request through the
	// gateway, for the waypoint check; waypointWait is its timeout.
	waypoints    func(context.Context) (inforce.Pool, func(), error)
	send         func(context.Context) (inforce.Send, func(), error)
	waypointWait time.Duration
}

// fixed opens what needs no opening (a URL the program reaches itself).
func fixed[T any](v T) func(context.Context) (T, func(), error) {
	return func(context.Context) (T, func(), error) { return v, func() {}, nil }
}

// NewChecks prepares the checks of one `pulumi up`, or says in the update's output why there
// are none. kubeconfig is the k3d cluster's (nil for an existing cluster: the stack's
// kubeconfig and context).
func NewChecks(ctx *pulumi.Context, cfg Config, kubeconfig pulumi.StringInput) *Checks {
	note := func(msg string) { _ = ctx.Log.Info("verify: "+msg, nil) }
	switch {
	case cfg.RenderDir != "":
		note("render mode applies nothing to a gateway; the after-update checks are skipped")
		return nil
	case !cfg.Verify:
		note("off (igwlab:verify is false): nothing checks that the scenario took effect on the gateway pods")
		return nil
	case ctx.DryRun():
		note("a preview changes nothing; the after-update checks run when pulumi up applies the change")
	}
	c := &Checks{ctx: ctx, cfg: cfg, timeout: cfg.CheckTimeout(), want: cfg.GatewayReplicas}
	clients := kubeClients(cfg, kubeconfig)
	t := envoyfilter.DefaultTarget
	t.Istio = cfg.IstioVersion
	if len(cfg.GatewayAdmins) > 0 {
		c.want = len(cfg.GatewayAdmins)
		c.pool = fixed[inforce.Pool](inforce.URLs(cfg.GatewayAdmins))
	} else {
		c.pool = podsAt(clients, t.Namespace, selectorText(t.Selector))
	}
	c.waypointWait = c.timeout
	if len(cfg.WaypointAdmins) > 0 {
		c.waypoints = fixed[inforce.Pool](inforce.URLs(cfg.WaypointAdmins))
	} else {
		c.waypoints, c.waypointWait = podsAt(clients, BackendNamespace, WaypointSelector), c.timeout+WaypointStartup
	}
	switch {
	case cfg.GatewayURL != "":
		c.send = fixed(inforce.GatewayURL(cfg.GatewayURL, WaypointProbePath))
	case cfg.Cluster == ClusterK3d:
		c.send = fixed(inforce.GatewayURL(cfg.HostGatewayURL(), WaypointProbePath))
	default:
		c.send = gatewayPodsAt(clients, t)
	}
	if cfg.PrometheusURL != "" {
		c.prometheus = fixed(func(ctx context.Context, path string) ([]byte, error) {
			return stats.GetAdmin(ctx, http.DefaultClient, cfg.PrometheusURL, path)
		})
	} else {
		c.prometheus = func(ctx context.Context) (func(context.Context, string) ([]byte, error), func(), error) {
			kc, err := clients(ctx)
			if err != nil {
				return nil, nil, err
			}
			return prometheusAt(kc), kc.Close, nil
		}
	}
	return c
}

// bind registers a check as a hook and returns the option that runs it after the resource
// it is given to is created or updated. It is nil when checks are off.
func (c *Checks) bind(name string, check func(context.Context) (string, error)) (pulumi.ResourceOption, error) {
	if c == nil {
		return nil, nil
	}
	h, err := c.ctx.RegisterResourceHook(name, func(*pulumi.ResourceHookArgs) error {
		msg, err := check(c.ctx.Context())
		if err != nil {
			return err
		}
		return c.ctx.Log.Info("verify: "+msg, nil)
	}, nil)
	if err != nil {
		return nil, err
	}
	return pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
		AfterCreate: []*pulumi.ResourceHook{h}, AfterUpdate: []*pulumi.ResourceHook{h},
	}), nil
}

// onGateway runs a check on the gateway pods' admins.
func (c *Checks) onGateway(check func(context.Context, inforce.Pool) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		pool, done, err := c.pool(ctx)
		if err != nil {
			return "", fmt.Errorf("reaching the gateway pods' Envoy admins: %w (set %s to admin URLs you reach yourself, or %s false)",
				err, configkey.Full(configkey.GatewayAdmins), configkey.Full(configkey.Verify))
		}
		defer done()
		return check(ctx, pool)
	}
}

// Scenario is the check bound to the scenario's EnvoyFilter: every gateway pod's
// /config_dump shows the knobs and no listener or filter chain is left draining.
// With a config push (igwlab:gatewayPush), every pod must show its generation first: the
// listener update reached the pod and the connections it replaced have drained.
func (c *Checks) Scenario(name string, k stacks.Knobs, push int, t envoyfilter.Target) (pulumi.ResourceOption, error) {
	return c.bind(ScenarioCheck, c.onGateway(func(ctx context.Context, pool inforce.Pool) (string, error) {
		res, err := inforce.Wait(ctx, pool, inforce.Want{Knobs: k, Push: push, Drained: true, Pods: c.want}, c.timeout)
		if err != nil {
			return "", c.scenarioFailed(name, t, err)
		}
		pushed := ""
		if push > 0 {
			pushed = fmt.Sprintf("; config push %d drained", push)
		}
		return fmt.Sprintf("scenario %s in effect on %d/%d gateway pods after %.1f s (%s; no listener draining%s)",
			name, res.Pods, c.want, res.Took.Seconds(), k.Short(), pushed), nil
	}))
}

// scenarioFailed says which pods lack which field, and what usually causes it.
func (c *Checks) scenarioFailed(name string, t envoyfilter.Target, err error) error {
	var ie *inforce.Error
	if !errors.As(err, &ie) {
		return fmt.Errorf("scenario %s: %w", name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s is not in effect: %v\n", name, ie)
	filter := t.Namespace + "/" + envoyfilter.DefaultName
	if fields := ie.Fields(); len(fields) > 0 {
		fmt.Fprintf(&b, "The EnvoyFilter %s was applied (the stack keeps it) but the pods' /config_dump lacks %s. Likely causes: "+
			"its listener portNumber (%d) is not the port the gateway's Envoy binds; its workloadSelector (%s) selects no gateway pod; "+
			"its match context (GATEWAY) is not the gateway's; Istio %s moved or renamed the field "+
			"(compare istioctl proxy-config listener <pod> -n %s -o json).",
			filter, strings.Join(fields, ", "), t.Port, selectorText(t.Selector), c.cfg.IstioVersion, t.Namespace)
	} else {
		fmt.Fprintf(&b, "The gateway's listeners did not finish draining, or its pods could not be read: "+
			"a drain longer than %s (igwlab:gatewayDrainDuration) needs a longer %s.", DurationText(c.cfg.GatewayDrainDuration),
			configkey.Full(configkey.VerifyTimeout))
	}
	fmt.Fprintf(&b, " %s false skips this check.", configkey.Full(configkey.Verify))
	return errors.New(b.String())
}

// Gateway is the check bound to the gateway's Helm release: every pod runs the configured
// workers and exposes the per-worker listener stats and connection manager stats the lab
// reads (Istio drops both unless the proxyStatsMatcher annotation took effect).
func (c *Checks) Gateway() (pulumi.ResourceOption, error) {
	return c.bind(GatewayCheck, c.onGateway(func(ctx context.Context, pool inforce.Pool) (string, error) {
		w := c.cfg.ProxyConcurrency
		// A rolling restart is complete when every pod is a new one; a scale-out when the new
		// pods pass their readiness probe.
		res, err := inforce.Wait(ctx, pool, inforce.Want{Concurrency: w, WorkerStats: true, Pods: c.want,
			Live: true, StartedAfter: c.cfg.Rollout.RestartedAt}, c.rolloutTimeout())
		if err != nil {
			return "", fmt.Errorf("gateway: %w\nThe proxy.istio.io/config annotation (concurrency, proxyStatsMatcher) is read when a pod starts: "+
				"pods that started before it changed keep the old values (kubectl rollout restart -n %s deploy/%s). %s false skips this check.",
				err, GatewayNamespace, GatewayRelease, configkey.Full(configkey.Verify))
		}
		restarted := ""
		if at := c.cfg.Rollout.restartedText(); at != "" {
			restarted = ", every one started after the restart of " + at
		}
		return fmt.Sprintf("gateway: %d/%d pods ready, run %d worker(s) and expose per-worker listener and connection manager stats%s (after %.1f s)",
			res.Pods, c.want, w, restarted, res.Took.Seconds()), nil
	}))
}

// Monitoring is the check bound to a PodMonitor: Prometheus scrapes every pod it selects.
func (c *Checks) Monitoring(monitor string) (pulumi.ResourceOption, error) {
	pool := inforce.PodMonitorPool(MonitorNamespace, monitor)
	return c.bind(MonitoringCheck+monitor, func(ctx context.Context) (string, error) {
		get, done, err := c.prometheus(ctx)
		if err != nil {
			return "", fmt.Errorf("reaching Prometheus: %w (set %s to its URL, or %s false)", err,
				configkey.Full(configkey.PrometheusURL), configkey.Full(configkey.Verify))
		}
		defer done()
		// Prometheus finds new monitors' targets only after the operator rewrites its config
		// and it reloads: minutes on a first install, more than a scenario switch takes.
		up, err := inforce.LiveTargets(ctx, get, []string{pool}, c.timeout+3*time.Minute)
		if err != nil {
			return "", fmt.Errorf("monitoring: %w", err)
		}
		return fmt.Sprintf("monitoring: Prometheus scrapes %d live target(s) of PodMonitor %s/%s", up[pool], MonitorNamespace, monitor), nil
	})
}

// Waypoint is the check bound to the waypoint (scenarios 06 and 07): requests sent through
// the gateway show on the waypoint pods' request counters, so the gateway's traffic takes the
// waypoint hop the scenario is about.
func (c *Checks) Waypoint() (pulumi.ResourceOption, error) {
	return c.bind(WaypointCheck, func(ctx context.Context) (string, error) {
		send, doneSend, err := c.send(ctx)
		if err != nil {
			return "", fmt.Errorf("reaching the gateway: %w (set %s to a URL you reach it at, or %s false)", err,
				configkey.Full(configkey.GatewayURL), configkey.Full(configkey.Verify))
		}
		defer doneSend()
		pool, done, err := c.waypoints(ctx)
		if err != nil {
			return "", fmt.Errorf("reaching the waypoint pods' Envoy admins: %w (set %s to admin URLs you reach yourself, or %s false)",
				err, configkey.Full(configkey.WaypointAdmins), configkey.Full(configkey.Verify))
		}
		defer done()
		res, err := inforce.ThroughWaypoint(ctx, send, pool, WaypointProbes, c.waypointWait)
		if err != nil {
			return "", fmt.Errorf("waypoint: %w\nThe gateway's requests did not reach the waypoint %s/%s. Likely causes: the httpbin Service "+
				"(or the %s namespace) is not labelled istio.io/use-waypoint=%s, or lacks istio.io/ingress-use-waypoint=true (without it the "+
				"ingress gateway bypasses the waypoint); the waypoint is not ready (kubectl get gateway -n %s %s is not Programmed, or "+
				"kubectl get pods -n %s -l %s shows none ready); ambient is not enabled for the namespace (istio.io/dataplane-mode=ambient) "+
				"or in istiod and ztunnel. %s false skips this check.",
				err, BackendNamespace, WaypointName, BackendNamespace, WaypointName, BackendNamespace, WaypointName, BackendNamespace, WaypointSelector,
				configkey.Full(configkey.Verify))
		}
		return fmt.Sprintf("waypoint carries the gateway's traffic: %d/%d requests seen on %d waypoint pods after %.1f s",
			res.Seen, res.Sent, res.Pods, res.Took.Seconds()), nil
	})
}

func selectorText(sel map[string]string) string {
	var parts []string
	for k, v := range sel {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
