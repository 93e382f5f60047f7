package sim

// The waypoint hop (a scenario with waypoint: true): the gateway's route to httpbin goes through
// the waypoint tier, as Istio's ambient ingress does (the gateway's cluster is the service's
// waypoint, HBONE on 15008). Each gateway worker keeps its own HTTP/2 pool to the waypoint
// Service, as Envoy's cluster manager keeps a connection pool per worker
// (source/common/upstream/cluster_manager_impl.cc ThreadLocalClusterManagerImpl): one
// connection, a second only when the first is at the waypoint's stream cap (100), each placed
// once by the waypoint Service's L4 balancer. So a few gateway workers hold a few long-lived
// waypoint connections, and a pinned gateway worker pins its waypoint pod too: the socket
// emulator's via-waypoint cluster, the same rules.

// upstreamOneWay is the delay between the gateway and its upstreams in each direction.
func (p *Pool) upstreamOneWay() int64 { return int64(p.cfg.UpstreamRTT / 2) }

// viaWaypoint sends a gateway stream's request on through its worker's pool to the waypoint
// tier and runs done when the waypoint's answer is back; a failed hop resets the stream.
func (p *Pool) viaWaypoint(w *worker, st *stream, done func()) {
	if p.wpPools == nil {
		p.wpPools = map[*worker]*transport{}
	}
	t := p.wpPools[w]
	if t == nil {
		t = &transport{p: p, dial: func(t *transport) *conn {
			c := p.dialTier(t, p.waypoints, p.wl4, nil, p.upstreamOneWay())
			c.unbounded = true // Envoy reads its upstream as fast as it comes
			return c
		}}
		p.wpPools[w] = t
	}
	hop := &stream{req: request{resp: st.req.resp, delay: st.req.delay}}
	hop.done = func(_ *stream, ok bool) {
		switch {
		case ok:
			done()
		case !st.c.closed && !st.ended:
			st.resetByUs()
		}
	}
	t.roundTrip(hop)
}

// closeUpstreams closes a stopped pod's workers' pools to the waypoint.
func (p *Pool) closeUpstreams(pod *Pod) {
	for _, w := range pod.workers {
		if t := p.wpPools[w]; t != nil {
			t.close()
			delete(p.wpPools, w)
		}
	}
}
