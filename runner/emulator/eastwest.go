package emulator

import (
	"fmt"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/stacks"
)

// East-west traffic on the pool: mesh client pods on the nodes, their connections captured by
// the node's ztunnel and tunnelled to the waypoint pods (ztunnel_outbound.go,
// hbone_server.go), the waypoint's connection manager serving the requests inside on the
// worker of the HBONE connection they came in on, and httpbin behind it.

// ApplyEastWest puts an east-west scenario in force: its knobs on every waypoint pod (the
// waypoint's EnvoyFilter), ztunnel's settings on every node's ztunnel, and as many client pods
// as it runs. Connections the waypoints accepted under the previous setup drain. It returns
// how many were asked to.
func (p *Pool) ApplyEastWest(s Setup, ew stacks.EastWest) (int, error) {
	if len(p.waypoints) == 0 {
		return 0, fmt.Errorf("east-west: the pool has no waypoint pods (start it with waypoint pods)")
	}
	z := ew.Ztunnel.WithDefaults()
	// ztunnel's work keeps its proportion to Envoy's (model.DefaultZtunnelCost): a scenario
	// that makes a request heavier on the pool (local.service_time) makes it heavier here too.
	p.mu.Lock()
	st := p.cfg.Model.ServiceTime
	p.mu.Unlock()
	zc := ZtunnelConfig{Workers: z.Workers, Cost: model.DefaultZtunnelCost.Scaled(st, model.DefaultCost.ServiceTime),
		Pool: model.HBONEPoolConfig{MaxStreamsPerConn: z.PoolMaxStreamsPerConn, UnusedRelease: z.PoolUnusedReleaseTimeout.D()}}
	if err := zc.Check(); err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.generation++
	p.applied++
	changed := model.SetupKey(p.wpSetup) != model.SetupKey(s)
	p.wpSetup = s
	cfg := p.listenerConfig(s, p.generation)
	gen := p.generation
	p.mu.Unlock()
	drained := 0
	for _, pod := range p.waypoints {
		drained += pod.apply(cfg, changed, p.cfg.ListenerDrainTime)
	}
	dst := p.waypointDsts
	if ew.Via == stacks.ViaZtunnel {
		dst = p.backendDsts
	}
	for i, zt := range p.backends.Ztunnels {
		zt.mu.Lock()
		if zt.out == nil {
			zt.out = newZtProxy(zt, p.clock, zc, model.ScenarioSeed(p.cfg.Seed^uint64(0x2e7+i), p.applied))
			if err := zt.out.listenInbound([]string{p.backends.HTTPBin[i]}); err != nil {
				zt.mu.Unlock()
				return 0, err
			}
		}
		zt.mu.Unlock()
		zt.out.reconfigure(zc, dst)
	}
	for len(p.clients) < ew.Clients {
		i := len(p.clients)
		zt := p.backends.Ztunnels[i%len(p.backends.Ztunnels)]
		cp, err := zt.out.capture(clientPodName(i), fmt.Sprintf("spiffe://cluster.local/ns/igw-client/sa/client-%d", i))
		if err != nil {
			return drained, err
		}
		p.clients = append(p.clients, cp)
	}
	p.event("apply", "", fmt.Sprintf("east-west generation %d, changed %v, %d waypoint connections draining, %d client pods, ztunnel %d workers",
		gen, changed, drained, ew.Clients, zc.Workers))
	return drained, nil
}

// waypointDsts are the waypoint's pods as ztunnel reaches them: HBONE to each pod's 15008.
func (p *Pool) waypointDsts() []hboneDst {
	var out []hboneDst
	for _, wp := range p.waypoints {
		a := wp.HBONEAddr()
		out = append(out, hboneDst{Pod: a, Dial: a, Target: "httpbin.igw-test.svc.cluster.local:8000", ID: waypointIdentity,
			Ready: a != "" && wp.Serving()})
	}
	return out
}

// backendDsts are httpbin's pods as ztunnel reaches them without a waypoint: HBONE to the pod's
// 15008, which its node's ztunnel takes.
func (p *Pool) backendDsts() []hboneDst {
	var out []hboneDst
	for i, addr := range p.backends.HTTPBin {
		zt := p.backends.Ztunnels[i]
		out = append(out, hboneDst{Pod: addr, Dial: zt.out.inboundAddr(), Target: addr, ID: httpbinIdentity, Ready: true})
	}
	return out
}

// resetWaypoints puts the waypoints back on their own configuration after an east-west
// scenario, for the gateway's hop through them.
func (p *Pool) resetWaypoints() {
	p.mu.Lock()
	changed := model.SetupKey(p.wpSetup) != model.SetupKey(Setup{})
	p.wpSetup = Setup{}
	cfg := p.listenerConfig(Setup{}, p.generation)
	p.mu.Unlock()
	if !changed {
		return
	}
	for _, pod := range p.waypoints {
		pod.apply(cfg, true, p.cfg.ListenerDrainTime)
	}
}

// ClientPod is a mesh client pod of the pool: where its client connects (its captured
// outbound), its node's ztunnel.
type ClientPod struct {
	Name, Addr, Node string
}

// ClientPods lists the first n client pods (ApplyEastWest makes them).
func (p *Pool) ClientPods(n int) ([]ClientPod, error) {
	if n > len(p.clients) {
		return nil, fmt.Errorf("east-west: %d client pods asked for, %d set up", n, len(p.clients))
	}
	var out []ClientPod
	for i, cp := range p.clients[:n] {
		out = append(out, ClientPod{Name: cp.Name, Addr: cp.Addr(), Node: p.backends.Ztunnels[i%len(p.backends.Ztunnels)].Name})
	}
	return out, nil
}

// clientPodName names client pod i like a Deployment's pod.
func clientPodName(i int) string {
	return fmt.Sprintf("client-7c9f6d5b8-%s", ztunnelName(100 + i)[len("ztunnel-"):])
}
