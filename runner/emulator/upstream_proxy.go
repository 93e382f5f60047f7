package emulator

import (
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// proxyLocal is proxy for a cluster of replicas in the process (upstream_local.go): the same
// request, counters and response as over a connection, without the connection.
func (h *hcm) proxyLocal(st *stream, cl *cluster, up *upstreamPool) (int, string) {
	req, err := upstreamRequest(st, cl)
	if err != nil {
		_ = st.respond(http.StatusBadRequest, "bad request")
		return http.StatusBadRequest, "DPE"
	}
	up.rqPending()
	body := newLocalBody(st, outgoingLength(req), cl.from)
	sreq, head, err := serverRequest(req, body)
	var lc *localConn
	if err == nil {
		lc, err = up.local.get()
	}
	cl.RqPendingActive.Dec()
	if err != nil {
		up.rqFailed()
		return noHead(st)
	}
	body.z = lc.r.z
	lc.r.z.received.Add(head)
	x := &localExchange{st: st, up: up, lc: lc, req: sreq, body: body, t0: time.Now(), header: http.Header{},
		relay: bodyRelay{st: st, cl: cl, m: h.pod.model}, lastOut: time.Now()}
	defer x.release() // a handler that panicked leaves its held bytes
	return x.finish(x.serve(lc.r.handler))
}

// outgoingLength is the body length the Transport sends (request.go outgoingLength): none,
// the request's, or unknown (-1, chunked).
func outgoingLength(req *http.Request) int64 {
	if req.Body == nil || req.Body == http.NoBody {
		return 0
	}
	if req.ContentLength != 0 {
		return req.ContentLength
	}
	return -1
}

// serve runs the handler; a panic is net/http's server closing the connection under it.
func (x *localExchange) serve(h http.Handler) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
		}
	}()
	h.ServeHTTP(x, x.req)
	return false
}

// finish is the handler's end: the server's last writes (server.go finishRequest), the
// connection kept or closed as both ends would, and the stream's end.
func (x *localExchange) finish(panicked bool) (int, string) {
	st, up := x.st, x.up
	truncated := panicked
	if panicked {
		// The server closes the connection: what its connection buffer held still goes out
		// (conn.finalFlush), nothing of its 2 KiB response buffer does.
		if x.decided {
			x.forward(nil)
		}
		x.closeAfter = true
	} else {
		x.handlerDone = true
		if x.status == 0 {
			x.WriteHeader(http.StatusOK)
		}
		if !x.decided {
			x.decide(x.buf)
		}
		x.forward(nil)
		if x.length >= 0 && x.wireBody < x.length && x.req.Method != http.MethodHead && !x.ended {
			truncated = true // a handler that wrote less than its Content-Length
		}
		if x.chunking && !truncated {
			t := x.finalTrailers()
			x.addSent(int64(len("0\r\n\r\n")) + headerLen(t))
			if x.resp != nil && len(t) > 0 {
				if x.resp.Trailer == nil {
					x.resp.Trailer = http.Header{}
				}
				for k, vv := range t {
					x.resp.Trailer[k] = vv
				}
			}
		}
	}
	up.local.put(x.lc, x.reusable(truncated))
	if x.resp == nil {
		up.rqFailed()
		if x.flags == "DC" {
			return 0, "DC"
		}
		return noHead(st)
	}
	status := x.resp.StatusCode
	defer func() { up.rqDone(status, time.Since(x.t0)) }()
	switch {
	case x.ended:
		return status, "-"
	case x.failed != nil:
		return status, x.flags
	case truncated:
		if st.ctx.Err() != nil {
			return status, "DC"
		}
		st.reset(http2.ErrCodeInternal) // the upstream broke off mid-body
		return status, "UPE"
	}
	return status, x.relay.end(x.resp.Trailer)
}

// reusable says whether the connection goes back to the pool: the server keeps it
// (response.shouldReuseConnection, after body.Close read what was left of the request) and
// the Transport read the response to its end.
func (x *localExchange) reusable(truncated bool) bool {
	if x.closeAfter || truncated || x.failed != nil {
		return false
	}
	if x.req.Method != http.MethodHead && x.declared != -1 && bodyAllowedForStatus(x.status) && x.declared != x.written {
		return false
	}
	b := x.body
	if x.req.ContentLength != 0 && !b.sawEOF && !b.closed {
		if b.unread() > maxPostHandlerReadBytes {
			return false
		}
		if ended, _ := b.discard(maxPostHandlerReadBytes); !ended {
			return false
		}
	}
	return true
}

// headerLen is the size of fields on the wire.
func headerLen(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + 4 + len(v))
		}
	}
	return n
}
