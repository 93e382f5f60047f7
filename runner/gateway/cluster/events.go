package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/stacks"
)

// The real lab changes its pool during a window through the stack, as the program's own
// config (infra/rollout.go): each event sets its key and runs `pulumi up`, so that
// `pulumi preview --diff` shows the same change first and the program's checks verify it
// (every new pod ready; after a restart, every pod a new one; a push in force on every pod and
// drained). A kill deletes a pod with no grace period, the nearest a cluster client comes to
// killing its container. A watcher lists the gateway pods while events are under way and
// records each pod's steps as Kubernetes shows them: started, ready, terminating, gone.

// PodPoll is how often the watcher lists the gateway pods.
var PodPoll = time.Second

var _ gateway.Evented = (*Cluster)(nil)

// poolEvents is the cluster target's event state.
type poolEvents struct {
	upMu sync.Mutex // one pulumi up at a time, as the stack's lock allows
	ups  sync.WaitGroup

	mu sync.Mutex
	// own is each key's value in the stack before the first scenario changed it.
	own     map[string]ownValue
	steps   []gateway.Disruption
	planned map[string]bool // pods the scenario's events started or removed
	pods    map[string]podStep
	last    chan struct{} // closed when the last event's update has ended
	watch   context.CancelFunc
	watched chan struct{}
	// bg outlives a window (a rollout goes on after it) and ends when the target closes:
	// a Ctrl-C closes the target, which interrupts the update as pulumi up's own does.
	bg     context.Context
	cancel context.CancelFunc
}

type ownValue struct {
	value string
	set   bool
}

// podStep is the last step recorded for a pod.
type podStep string

func (c *Cluster) events() *poolEvents {
	c.evOnce.Do(func() {
		c.ev.bg, c.ev.cancel = context.WithCancel(context.Background())
		c.ev.planned, c.ev.pods = map[string]bool{}, map[string]podStep{}
	})
	return &c.ev
}

// Slots implements gateway.Evented: the most gateway pods the program accepts.
func (c *Cluster) Slots() int { return infra.MaxGatewayReplicas }

// SetReplicas implements gateway.Evented: it sets igwlab:gatewayReplicas (0: the stack's own)
// for the scenario's pulumi up, which Apply runs next, and ends the last window's watch.
func (c *Cluster) SetReplicas(ctx context.Context, n int) error {
	ev := c.events()
	ev.stopWatch()
	ev.ups.Wait() // the last window's events are all applied first, in their order
	ev.upMu.Lock()
	defer ev.upMu.Unlock()
	v := ""
	if n > 0 {
		v = strconv.Itoa(n)
	}
	return c.hold(ctx, configkey.GatewayReplicas, v)
}

// hold sets a key of the stack for the next pulumi up, or with "" puts back the value it had
// before the first scenario changed it (removing it if it had none).
func (c *Cluster) hold(ctx context.Context, key, v string) error {
	ev := c.events()
	full := configkey.Full(key)
	cur, set, err := c.o.Stack.GetConfig(ctx, full)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	if ev.own == nil {
		ev.own = map[string]ownValue{}
	}
	own, ok := ev.own[key]
	if !ok {
		own = ownValue{cur, set}
		ev.own[key] = own
	}
	ev.mu.Unlock()
	switch {
	case v != "" && (!set || cur != v):
		return c.o.Stack.SetConfig(ctx, full, v, false)
	case v == "" && own.set && cur != own.value:
		return c.o.Stack.SetConfig(ctx, full, own.value, false)
	case v == "" && !own.set && set:
		return c.o.Stack.RemoveConfig(ctx, full)
	}
	return nil
}

// Event implements gateway.Evented: the event's config is set and its pulumi up started;
// both go on in the background, after the pulumi up before them.
func (c *Cluster) Event(ctx context.Context, e stacks.Event, _ stacks.Pool) error {
	ev := c.events()
	ev.startWatch(c)
	if e.Kill != nil {
		return c.kill(ctx, *e.Kill)
	}
	ev.ups.Add(1)
	ev.mu.Lock()
	prev, done := ev.last, make(chan struct{})
	ev.last = done
	ev.mu.Unlock()
	go func() {
		defer ev.ups.Done()
		defer close(done)
		if prev != nil {
			<-prev // the events' updates in their order
		}
		ev.upMu.Lock()
		defer ev.upMu.Unlock()
		what, err := c.eventConfig(ev.bg, e)
		if err != nil {
			ev.step(gateway.Disruption{Time: time.Now(), Kind: "failed", Detail: fmt.Sprintf("%s: %v", e, err)})
			return
		}
		start := time.Now()
		ev.step(gateway.Disruption{Time: start, Kind: e.Kind(), Detail: "pulumi up with " + what})
		if _, err := c.o.Stack.Up(ev.bg, c.progress()); err != nil {
			ev.step(gateway.Disruption{Time: time.Now(), Kind: "failed", Detail: fmt.Sprintf("pulumi up for %s: %v", e, err)})
			return
		}
		ev.step(gateway.Disruption{Time: time.Now(), Kind: "applied",
			Detail: fmt.Sprintf("pulumi up for %s done after %.1f s, the program's checks passed", e.Kind(), time.Since(start).Seconds())})
	}()
	return nil
}

// eventConfig sets the stack config an event changes and says what it set.
func (c *Cluster) eventConfig(ctx context.Context, e stacks.Event) (string, error) {
	st := c.o.Stack
	set := func(key, v string) error { return st.SetConfig(ctx, configkey.Full(key), v, false) }
	switch {
	case e.Scale > 0:
		return fmt.Sprintf("%s=%d", configkey.Full(configkey.GatewayReplicas), e.Scale), set(configkey.GatewayReplicas, strconv.Itoa(e.Scale))
	case e.Restart != nil:
		at := time.Now().UTC().Format(time.RFC3339)
		if err := set(configkey.GatewayRestartedAt, at); err != nil {
			return "", err
		}
		for key, v := range map[string]string{configkey.GatewayMaxSurge: e.Restart.MaxSurge, configkey.GatewayMaxUnavailable: e.Restart.MaxUnavailable} {
			var err error
			if v != "" {
				err = set(key, v)
			} else if _, ok, _ := st.GetConfig(ctx, configkey.Full(key)); ok {
				err = st.RemoveConfig(ctx, configkey.Full(key))
			}
			if err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%s=%s (%s)", configkey.Full(configkey.GatewayRestartedAt), at, e.Restart.Strategy()), nil
	case e.Push:
		raw, _, err := st.GetConfig(ctx, configkey.Full(configkey.GatewayPush))
		if err != nil {
			return "", err
		}
		n, _ := strconv.Atoi(raw)
		return fmt.Sprintf("%s=%d", configkey.Full(configkey.GatewayPush), n+1), set(configkey.GatewayPush, strconv.Itoa(n+1))
	}
	return "", fmt.Errorf("the real lab cannot run %s", e)
}

// kill deletes the i-th ready gateway pod (oldest first) with no grace period.
func (c *Cluster) kill(ctx context.Context, i int) error {
	s := selectors[gateway.Gateway]
	pods, err := c.o.Kube.Pods(ctx, s.ns, s.sel)
	if err != nil {
		return err
	}
	slices.SortFunc(pods, byAge)
	if i < 0 || i >= len(pods) {
		return fmt.Errorf("kill pod %d: the gateway has %d ready pods (0..%d)", i, len(pods), len(pods)-1)
	}
	p := pods[i]
	if err := c.o.Kube.Delete(ctx, p.Namespace, p.Name, 0); err != nil {
		return err
	}
	ev := c.events()
	ev.mu.Lock()
	ev.planned[p.Name] = true
	ev.mu.Unlock()
	ev.step(gateway.Disruption{Time: time.Now(), Kind: "kill", Pod: p.Name, Detail: "deleted with no grace period: its connections reset, the Deployment replaces it"})
	return nil
}

func byAge(a, b corev1.Pod) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (c *Cluster) progress() io.Writer {
	if c.o.Progress == nil {
		return io.Discard
	}
	return c.o.Progress
}

// Timeline implements gateway.Evented.
func (c *Cluster) Timeline(since time.Time) []gateway.Disruption {
	ev := c.events()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []gateway.Disruption
	for _, d := range ev.steps {
		if !d.Time.Before(since) {
			out = append(out, d)
		}
	}
	return out
}

func (ev *poolEvents) step(d gateway.Disruption) {
	ev.mu.Lock()
	ev.steps = append(ev.steps, d)
	ev.mu.Unlock()
}

// closeEvents interrupts the updates still running and waits for them to end, so that the
// stack's lock and state are left as pulumi leaves them.
func (c *Cluster) closeEvents() {
	ev := c.events()
	ev.stopWatch()
	ev.cancel()
	ev.ups.Wait()
}
