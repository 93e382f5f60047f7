package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/internal/jwt"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/inforce"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// AdminPort is Envoy's admin port inside Istio's proxies (localhost only; reached by port-forward).
const AdminPort = kube.AdminPort

// gateway.Pod selectors of the lab's cluster.
var selectors = map[string]struct{ ns, sel string }{
	gateway.Gateway:  {infra.GatewayNamespace, "istio=ingressgateway"},
	gateway.Waypoint: {infra.BackendNamespace, infra.WaypointSelector},
	gateway.Ztunnel:  {infra.IstioNamespace, "app=ztunnel"},
}

// ServiceAddr is the gateway Service as the load generators reach it.
var ServiceAddr = "istio-ingressgateway." + infra.GatewayNamespace + ".svc.cluster.local:80"

// HeadlessTarget is the gateway's headless Service as a gRPC client names it for round_robin:
// DNS answers with every ready gateway pod's address, one connection each.
var HeadlessTarget = "dns:///" + infra.GatewayHeadless + "." + infra.GatewayNamespace + ".svc.cluster.local:80"

// ClusterOptions configure a cluster target.
type ClusterOptions struct {
	Name     string // k3d or existing
	Kube     Kube
	Stack    pulumistack.Stack
	Progress io.Writer // Pulumi's progress goes here
	// DrainTimeout bounds the wait for listeners drained by an EnvoyFilter change (default:
	// the lab's drain time plus DrainMargin).
	DrainTimeout time.Duration
	// OnClose runs when the target is closed (it releases the stack's lock).
	OnClose func()
	// Departures are where this lab runs every scenario differently from what the lab asks
	// for (a k3d lab whose pods share fewer real cores than they request: doctor.HostShared).
	Departures []stacks.Departure
}

// DrainMargin is what the wait for drained listeners allows beyond the gateway's drain time:
// the xDS push reaching every pod after pulumi up returns, and the one-second polls.
const DrainMargin = infra.DrainMargin

// DrainTimeout is how long to wait, after a scenario switch on a lab stack, for the listeners
// it replaced to drain: the stack's igwlab:gatewayDrainDuration (the program's default when
// unset; Envoy keeps a replaced listener exactly that long) plus DrainMargin.
func DrainTimeout(ctx context.Context, st pulumistack.Stack) (time.Duration, error) {
	d := infra.Defaults.GatewayDrainDuration
	raw, ok, err := st.GetConfig(ctx, configkey.Full(configkey.GatewayDrainDuration))
	if err != nil {
		return 0, err
	}
	if ok && raw != "" {
		if d, err = infra.ParseDrainDuration(raw); err != nil {
			return 0, err
		}
	}
	return d + DrainMargin, nil
}

// Cluster is the real lab: scenarios are switched through the Pulumi stack, stats come from each
// gateway pod's Envoy admin through a port-forward, and the load runs in the loadgen namespace.
type Cluster struct {
	o      ClusterOptions
	key    *jwt.Key
	seen   podsSeen
	ev     poolEvents
	evOnce sync.Once
}

// NewCluster makes a cluster target.
func NewCluster(o ClusterOptions) *Cluster {
	if o.DrainTimeout == 0 {
		o.DrainTimeout = infra.Defaults.GatewayDrainDuration + DrainMargin
	}
	return &Cluster{o: o}
}

var _ gateway.Target = (*Cluster)(nil)

// Info implements gateway.Target: the pool's size and the workers per pod, read from Envoy itself.
func (c *Cluster) Info(ctx context.Context) (gateway.Info, error) {
	pods, err := c.Pods(ctx, gateway.Gateway)
	if err != nil {
		return gateway.Info{}, err
	}
	if len(pods) == 0 {
		return gateway.Info{}, fmt.Errorf("no ready gateway pod (%s in %s): is the lab up? (pulumi up -s lab)", selectors[gateway.Gateway].sel, selectors[gateway.Gateway].ns)
	}
	raw, err := c.Admin(ctx, pods[0], "/server_info")
	if err != nil {
		return gateway.Info{}, err
	}
	si, err := stats.ParseServerInfo(raw)
	if err != nil {
		return gateway.Info{}, fmt.Errorf("%s: %w", pods[0].Name, err)
	}
	wp, _ := c.Pods(ctx, gateway.Waypoint)
	return gateway.Info{Name: c.o.Name, Pods: len(pods), Concurrency: si.Concurrency, Waypoints: len(wp),
		Endpoint: ServiceAddr, Details: map[string]any{"envoy": si.Version}, EnvoyDefaults: envoyMinor(si.Version), Departures: c.o.Departures}, nil
}

// envoyMinor is the minor release in Envoy's server_info version
// ("<commit>/1.35.3/Clean/RELEASE/BoringSSL" is "1.35"), or "" when there is none.
func envoyMinor(version string) string {
	m := envoyVersion.FindStringSubmatch(version)
	if m == nil {
		return ""
	}
	return m[1]
}

var envoyVersion = regexp.MustCompile(`/(1\.\d+)\.\d+`)

// Apply implements gateway.Target: set the stack's scenario and `pulumi up`, which with the
// stack's checks on (igwlab:verify) returns only once the listeners the change replaced have
// drained, so the redial they cause is not credited to the knob; with them off, or on a
// Pulumi CLI older than pulumistack.MinCLI (whose engine only warns when such a check fails),
// Apply waits for that itself.
func (c *Cluster) Apply(ctx context.Context, sc stacks.Scenario) error {
	if c.o.Stack == nil {
		return fmt.Errorf("the %s target needs a Pulumi stack to switch scenarios", c.o.Name)
	}
	if err := c.switchStack(ctx, sc); err != nil {
		if ctx.Err() != nil {
			return upInterrupted(c.o.Stack, sc.Name, err, c.o.Progress)
		}
		return err
	}
	if v, _, err := c.o.Stack.GetConfig(ctx, configkey.Full(configkey.Verify)); err != nil {
		return err
	} else if v != "false" {
		cli, err := c.o.Stack.CLIVersion(ctx)
		if err != nil {
			return err
		}
		if pulumistack.HooksFailUpdates(cli) {
			// pulumi up ran the program's scenario check (infra.Checks.Scenario, the same
			// inforce.Wait): it returned once every pod showed the knobs and nothing was draining.
			return nil
		}
		if c.o.Progress != nil {
			fmt.Fprintf(c.o.Progress, "Pulumi CLI %s only warns when the stack's checks fail (%s and later fail the update): waiting for the drain here\n", cli, pulumistack.MinCLI)
		}
	}
	return c.waitDrained(ctx)
}

// switchStack sets the scenario in the stack's config and runs `pulumi up`.
func (c *Cluster) switchStack(ctx context.Context, sc stacks.Scenario) error {
	// After the last window's events' updates, all of them: the stack takes one update at a
	// time, and the events' come in their order.
	ev := c.events()
	ev.ups.Wait()
	ev.upMu.Lock()
	defer ev.upMu.Unlock()
	if sc.Filters.JWT != nil {
		if err := c.ensureJWTKey(ctx); err != nil {
			return err
		}
	}
	if !sc.Override.IsZero() {
		// A sweep's value or capacity's --knob: the catalog's scenario with these on top, as
		// `igwlab up --scenario S --set ...` would write it.
		b, err := json.Marshal(sc.Override)
		if err != nil {
			return err
		}
		if err := c.o.Stack.SetConfig(ctx, configkey.Full(configkey.Knobs), string(b), false); err != nil {
			return err
		}
	} else if _, set, _ := c.o.Stack.GetConfig(ctx, configkey.Full(configkey.Knobs)); set {
		// A suite runs the catalog's knobs; an override would make every verdict about something else.
		if err := c.o.Stack.RemoveConfig(ctx, configkey.Full(configkey.Knobs)); err != nil {
			return err
		}
		if c.o.Progress != nil {
			fmt.Fprintln(c.o.Progress, "removed the stack's igwlab:knobs override: a suite runs the catalog's knobs")
		}
	}
	if err := c.o.Stack.SetConfig(ctx, configkey.Full(configkey.Scenario), sc.Name, false); err != nil {
		return err
	}
	if _, err := c.o.Stack.Up(ctx, c.o.Progress); err != nil {
		return fmt.Errorf("pulumi up for %s: %w", sc.Name, err)
	}
	return nil
}

// waitDrained waits until no gateway pod has a listener or filter chain draining.
func (c *Cluster) waitDrained(ctx context.Context) error {
	_, err := inforce.Wait(ctx, gateway.AdminPool{Target: c, Role: gateway.Gateway}, inforce.Want{Drained: true}, c.o.DrainTimeout)
	if err != nil {
		return fmt.Errorf("waiting for the listeners the switch replaced to drain (the gateway's drain time, igwlab:gatewayDrainDuration, plus %s): %w", DrainMargin, err)
	}
	return nil
}

func (c *Cluster) ensureJWTKey(ctx context.Context) error {
	if c.key != nil {
		return nil
	}
	pemText, ok, err := c.o.Stack.GetConfig(ctx, configkey.Full(configkey.JWTKey))
	if err != nil {
		return err
	}
	if ok {
		if c.key, err = jwt.FromPEM("igwlab", pemText); err != nil {
			return fmt.Errorf("stack config igwlab:jwtKey: %w", err)
		}
	} else {
		if c.key, err = jwt.Generate("igwlab"); err != nil {
			return err
		}
		if err := c.o.Stack.SetConfig(ctx, configkey.Full(configkey.JWTKey), c.key.PEM(), true); err != nil {
			return err
		}
	}
	return c.o.Stack.SetConfig(ctx, configkey.Full(configkey.JWKS), c.key.JWKS(), false)
}

// Pods implements Target.
func (c *Cluster) Pods(ctx context.Context, role string) ([]gateway.Pod, error) {
	if role == gateway.Kubelet {
		return c.kubelets(ctx)
	}
	s, ok := selectors[role]
	if !ok {
		return nil, fmt.Errorf("no pods of role %q", role)
	}
	pods, err := c.o.Kube.Pods(ctx, s.ns, s.sel)
	if err != nil {
		return nil, err
	}
	out := make([]gateway.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, gateway.Pod{Name: p.Name, Role: role, Namespace: p.Namespace,
			Admin: fmt.Sprintf("pod/%s/%s:%d", p.Namespace, p.Name, adminPort(role))})
	}
	if role == gateway.Gateway {
		c.seen.set(out)
	}
	return out, nil
}

// kubelets are the nodes the gateway pods run on, as pods of role Kubelet named after them.
func (c *Cluster) kubelets(ctx context.Context) ([]gateway.Pod, error) {
	s := selectors[gateway.Gateway]
	pods, err := c.o.Kube.Pods(ctx, s.ns, s.sel)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []gateway.Pod
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" && !seen[n] {
			seen[n] = true
			out = append(out, gateway.Pod{Name: n, Role: gateway.Kubelet, Admin: "node/" + n + gateway.KubeletCAdvisor})
		}
	}
	return out, nil
}

func adminPort(role string) int {
	if role == gateway.Ztunnel {
		return 15020
	}
	return AdminPort
}

// Admin implements Target.
func (c *Cluster) Admin(ctx context.Context, p gateway.Pod, path string) ([]byte, error) {
	if p.Role == gateway.Kubelet {
		return c.o.Kube.NodeProxy(ctx, p.Name, path)
	}
	if p.Role == gateway.Ztunnel && strings.HasPrefix(path, "/stats/prometheus") {
		path = "/metrics"
	}
	return c.o.Kube.Get(ctx, p.Namespace, p.Name, adminPort(p.Role), path)
}

// Load implements gateway.Target: the client runs as its kind says it runs in a cluster (in
// its pod of the loadgen namespace), and what it prints is read back into the
// same Result as on the local target.
func (c *Cluster) Load(ctx context.Context, spec load.Spec) (*load.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, spec.Duration+3*time.Minute)
	defer cancel()
	client, err := load.Lookup(spec.Kind)
	if err != nil {
		return nil, err
	}
	run := client.InCluster
	var out []byte
	switch {
	case run.Exec != nil:
		target := ServiceAddr
		if spec.LB == load.RoundRobin {
			target = HeadlessTarget
		}
		out, err = c.execIn(ctx, run.Exec.Selector, run.Exec.Container, run.Exec.Command(spec, target))
	default:
		return nil, fmt.Errorf("the %s client has no way to run in a cluster", spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	return run.Read(out)
}

func (c *Cluster) execIn(ctx context.Context, selector, container string, cmd []string) ([]byte, error) {
	pods, err := c.o.Kube.Pods(ctx, infra.LoadgenNamespace, selector)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no ready %s pod in %s", selector, infra.LoadgenNamespace)
	}
	out, _, err := c.o.Kube.Exec(ctx, infra.LoadgenNamespace, pods[0].Name, container, cmd)
	return out, err
}

// Token implements Target.
func (c *Cluster) Token(issuer string) (string, error) {
	if c.key == nil {
		return "", fmt.Errorf("no JWT key yet: the scenario's filters were not applied")
	}
	return c.key.Token(issuer, 24*time.Hour), nil
}

// Close implements Target.
func (c *Cluster) Close() error {
	c.closeEvents()
	c.o.Kube.Close()
	if c.o.OnClose != nil {
		c.o.OnClose()
	}
	return nil
}
