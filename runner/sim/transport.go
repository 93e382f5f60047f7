package sim

import "time"

// transport is one HTTP/2 connection pool as the lab's clients and Envoy's upstream pools keep
// one: x/net's http2.Transport with StrictMaxConcurrentStreams false (h2dial, fortio's Go
// client, and Go's net/http for h2), and Envoy's HTTP/2 upstream pool to the waypoint. A new
// stream takes the first connection that can take one (x/net http2 client_conn_pool.go
// getClientConn: ClientConn.ReserveNewRequest, true while no GOAWAY came and the streams in
// flight are under the server's SETTINGS_MAX_CONCURRENT_STREAMS: transport.go
// idleStateLocked), and when none can, waits for a connection the pool dials, one dial at a
// time per address (getStartDialLocked); streams that still do not fit start the next dial.
// A connection that saw a GOAWAY takes no new stream and is closed when its streams are done.
//
// queue, set, is grpc-go's behaviour instead (grpcTransport): a stream over the cap waits for a
// stream of its connection to end (http2_client.go NewStream: streamQuota, waitForStream), and
// no second connection is dialled for it.
type transport struct {
	p     *Pool
	dial  func(t *transport) *conn
	conns []*conn
	// dialing is the dial in flight; waiting the streams waiting for a connection.
	dialing *conn
	waiting []*stream
	// maxConns bounds the connections (fortio's client: 1); 0: none.
	maxConns int
	// onConn is told of each connection the transport opens (the client's record).
	onConn func(c *conn)
	// assumed is the stream cap the client assumes on a connection until the server's SETTINGS
	// reach it, one round trip after the connection is up: x/net's initialMaxConcurrentStreams
	// (100, transport.go newClientConn; processSettings replaces it). After a dial each waiting
	// request reserves a stream on the new connection at once (client_conn_pool.go
	// getClientConn: ReserveNewRequest right after the dial), so 500 requests against a cap of
	// 128 open five connections, not four. 0: the client waits for the SETTINGS (Envoy's pool).
	assumed uint32
	// primed: the transport's first connection has the server's SETTINGS before any worker
	// uses it (h2dial.go prime: a shared transport first sends one request and reads its
	// answer, as a long-running client does).
	primed bool
}

// xnetInitialMaxConcurrentStreams is x/net's cap before the server's SETTINGS.
const xnetInitialMaxConcurrentStreams = 100

// takes says whether c can take another stream now, as the client sees its cap.
func (t *transport) takes(c *conn) bool {
	if !c.ready || c.goAway || c.gone {
		return false
	}
	limit := c.peerMax
	if t.assumed > 0 && !c.settingsSeen {
		limit = t.assumed
	}
	return uint32(c.inflight) < limit
}

// roundTrip sends st on a connection that can take it, or waits for one.
func (t *transport) roundTrip(st *stream) {
	for _, c := range t.conns {
		if t.takes(c) {
			c.send(st)
			return
		}
	}
	t.waiting = append(t.waiting, st)
	t.maybeDial()
}

func (t *transport) maybeDial() {
	if t.dialing != nil || len(t.waiting) == 0 {
		return
	}
	if t.maxConns > 0 && t.usable() >= t.maxConns {
		return
	}
	t.dialing = t.dial(t)
	if t.onConn != nil {
		t.onConn(t.dialing)
	}
}

// usable counts the connections still taking streams.
func (t *transport) usable() int {
	n := 0
	for _, c := range t.conns {
		if !c.goAway && !c.gone {
			n++
		}
	}
	return n
}

func (t *transport) onReady(c *conn) {
	if t.dialing == c {
		t.dialing = nil
	}
	t.conns = append(t.conns, c)
	if t.assumed > 0 && !(t.primed && c == t.conns[0] && len(t.conns) == 1) {
		// The server's SETTINGS come a round trip after the connection is up.
		t.p.Sim.After(time.Duration(2*c.ow), func() {
			c.settingsSeen = true
			t.flush()
		})
	} else {
		c.settingsSeen = true
	}
	t.flush()
}

// flush hands waiting streams to connections that can take them, dialling again for the rest.
func (t *transport) flush() {
	w := t.waiting
	t.waiting = nil
	for i, st := range w {
		sent := false
		for _, c := range t.conns {
			if t.takes(c) {
				c.send(st)
				sent = true
				break
			}
		}
		if !sent {
			t.waiting = append(t.waiting, w[i:]...)
			break
		}
	}
	t.maybeDial()
}

func (t *transport) onGoAway(*conn) { t.maybeDial() }

func (t *transport) onClosed(c *conn) {
	if t.dialing == c {
		t.dialing = nil
		// A dial that failed fails the streams waiting for it (connection refused).
		w := t.waiting
		t.waiting = nil
		for _, st := range w {
			st.c = c
			c.inflight++
			c.streams[st] = struct{}{}
			st.fail()
		}
		return
	}
	for i, o := range t.conns {
		if o == c {
			t.conns = append(t.conns[:i], t.conns[i+1:]...)
			break
		}
	}
	t.flush()
}

// close closes every connection from the client's side.
func (t *transport) close() {
	for _, c := range t.conns {
		c.goAway = true
		if c.inflight == 0 {
			c.clientClose()
		}
	}
	t.waiting = nil
}
