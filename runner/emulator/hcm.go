package emulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/model"
)

// hcm is a pod's HTTP connection manager: the stats Envoy keeps under http.<prefix>; and the
// request path from a stream to an upstream cluster and back.
type hcm struct {
	pod    *Pod
	prefix string
	*model.HCMStats
}

func newHCM(p *Pod) *hcm {
	return &hcm{pod: p, prefix: p.hcmPrefix, HCMStats: model.NewHCMStats(p.store, p.hcmPrefix, p.listenerAddr)}
}

func (h *hcm) connOpened(sc *serverConn) {
	for _, s := range sc.cxStats(h.CxTotal, h.LCxTotal, sc.w.CxTotal) {
		s.Inc()
	}
	for _, s := range sc.cxStats(h.CxActive, h.LCxActive, sc.w.CxActive) {
		s.Inc()
	}
	h.pod.pool.obs.connOpened()
}

// countCodec counts the codec the connection manager made for the connection from its first
// bytes (ConnectionManagerImpl::createCodec).
func (sc *serverConn) countCodec(h2 bool) {
	sc.hasCodec.Store(true)
	sc.h2.Store(h2)
	h := sc.h
	if h2 {
		h.CxHTTP2Total.Inc()
		h.CxHTTP2Active.Inc()
	} else {
		h.CxHTTP1Total.Inc()
		h.CxHTTP1Active.Inc()
	}
	sc.codecActive = h.CxHTTP1Active
	if h2 {
		sc.codecActive = h.CxHTTP2Active
	}
}

// connClosed counts a connection's end as Envoy's connection manager does
// (ConnectionManagerImpl::onEvent, doConnectionClose): by the side that closed it (local: the
// gateway; remote: the client), and, when requests were still active, once more by that side
// and in downstream_cx_destroy_active_rq. A close from outside the connection manager (a
// drained listener, the codec's flood callback) is counted under the remote side's
// active-request counter, a misattribution Envoy's source notes.
//
// The destroy counters move before the active gauges fall, as in Envoy (doConnectionClose
// counts, the connection's destructor lowers downstream_cx_active later), so whoever sees no
// connection active sees how the last one ended.
func (h *hcm) connClosed(sc *serverConn, local bool, rqSide int, _ string) {
	h.CxDestroy.Inc()
	if local {
		h.CxDestroyLocal.Inc()
	} else {
		h.CxDestroyRemote.Inc()
	}
	switch rqSide {
	case sideLocal:
		h.CxDestroyActiveRq.Inc()
		h.CxDestroyLocalActiveRq.Inc()
	case sideRemote:
		h.CxDestroyActiveRq.Inc()
		h.CxDestroyRemoteActiveRq.Inc()
	}
	ms := float64(time.Since(sc.opened)) / float64(time.Millisecond)
	h.CxLength.Observe(ms)
	h.LCxLength.Observe(ms)
	sc.mem.add(-connMemory)
	h.pod.forget(sc)
	for _, s := range sc.cxStats(h.CxActive, h.LCxActive, sc.w.CxActive) {
		s.Dec()
	}
	if sc.codecActive != nil {
		sc.codecActive.Dec()
	}
	if sc.tunnel == nil {
		sc.w.active.Add(-1)
	}
}

// cxStats are the connection counters a connection moves: the connection manager's, its
// listener's and its worker's. A connection inside an HBONE tunnel reached the waypoint's
// connection manager through the internal listener on the worker of the tunnel's HBONE
// connection, which the worker's listener counters count instead (hbone_server.go).
func (sc *serverConn) cxStats(hcm, listener, worker *Stat) []*Stat {
	if sc.tunnel != nil {
		return []*Stat{hcm}
	}
	return []*Stat{hcm, listener, worker}
}

// beginStream is ServerConnectionImpl::onBeginHeaders -> ConnectionManagerImpl::newStream for
// a new stream: Envoy's stream exists (and is counted) from its header block's first byte. It
// reports false, counting nothing, when the connection closed (and reset its streams) since the
// session made the stream: resetAllStreams has passed it by, so nothing would end it.
func (h *hcm) beginStream(st *stream) bool {
	sc := st.sc
	sc.mu.Lock()
	if sc.closing || st.reset_ {
		sc.mu.Unlock()
		return false
	}
	st.envoy = true
	h.RqTotal.Inc()
	h.RqHTTP2.Inc()
	h.RqActive.Inc()
	sc.requests++
	reqs := sc.requests
	sc.atCap = h.pod.pool.obs.streams(int64(sc.open), int64(sc.cfg.MaxConcurrentStreams), sc.atCap)
	sc.mu.Unlock()
	sc.mem.add(h.pod.pool.cfg.streamMemory())
	st.atLimit = model.AtRequestLimit(reqs, sc.cfg.MaxRequestsPerConn)
	st.startDurationTimer()
	return true
}

// decodeHeaders is the request's headers reaching the connection manager: the worker's work on
// them is booked in the order the HEADERS arrived (a worker dispatches a connection's requests
// in the order it reads them), and the filters and the upstream run once it is done.
func (h *hcm) decodeHeaders(st *stream) {
	sc := st.sc
	st.dispatched = true
	st.work = sc.book(h.requestCost(sc))
	sc.mu.Lock()
	closing := sc.closing
	sc.mu.Unlock()
	if closing {
		// The connection closed under the dispatch, maybe after dropping its work: drop this
		// too (close marks closing before it drops), and the reset has ended the stream.
		sc.w.Drop(sc)
		return
	}
	if sc.pendingFlush == nil {
		sc.pendingFlush = newDispatchFlush()
	}
	st.flush = sc.pendingFlush
	// Armed only now: the timer's goroutine answers 408 through the fields set above, and
	// arming it is what makes them visible to that goroutine.
	st.startIdleTimer()
	sc.order.push(orderItem{b: st.work, start: h.begin(st), end: func() {
		if st.state.CompareAndSwap(streamQueued, streamHandled) {
			h.pod.pool.runners.run(func() { h.handle(st) })
		}
	}})
}

// handle serves one stream once the worker has done its work on the request: the filter chain,
// the upstream round trip, the response's share of the worker per KiB, then the stats and
// access log.
func (h *hcm) handle(st *stream) {
	defer st.handlerDone()
	sc := st.sc
	flags := "-"
	status := 0
	defer func() {
		h.finishStats(st, status)
		if al := sc.cfg.Filters.AccessLog; al != nil {
			if h.pod.pool.access.log(st, status, flags, al.ResponseFlags) {
				h.AccessLogged.Inc()
				_ = sc.w.Serve(context.Background(), sc, h.pod.pool.access.cost)
			}
		}
	}()

	if st.ctx.Err() != nil {
		flags = "DC"
		return
	}
	if j := sc.cfg.Filters.JWT; j != nil && h.pod.role == roleGateway {
		if code, msg := h.pod.pool.jwt.check(st.header.Get("Authorization"), j); code != 0 {
			h.JwtDenied.Inc()
			status = code
			_ = st.respond(code, msg)
			return
		}
	}
	cl := h.pod.route(st, sc.cfg)
	if cl == nil {
		status, flags = http.StatusNotFound, "NR"
		_ = st.respond(status, "no route")
		return
	}
	status, flags = h.proxy(st, cl)
}

// requestCost is the worker's work to take up a request and run it through the filters.
func (h *hcm) requestCost(sc *serverConn) time.Duration {
	return h.pod.model.Request(sc.cfg, h.pod.role == roleGateway, h.pod.pool.jwt.cost)
}

// begin is what the worker does as it takes the request up, before its filters: Envoy's
// ConnectionManagerImpl::newStream, which the worker's codec calls as it dispatches the
// request's HEADERS, counts every request at or over max_requests_per_connection in
// downstream_cx_max_requests_reached and starts the drain (the GOAWAY shutdown notice) on the
// first. A saturated worker dispatches request N only after the work queued before it, so
// the notice leaves that much later and the connection takes more requests meanwhile.
func (h *hcm) begin(st *stream) func() {
	if !st.atLimit {
		return nil
	}
	return func() {
		h.MaxRequestsReached.Inc()
		st.sc.startDrain("max_requests_per_connection")
	}
}

func (h *hcm) finishStats(st *stream, status int) {
	if st.wroteHeader {
		h.RqTime.Observe(float64(time.Since(st.started)) / float64(time.Millisecond))
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// proxy forwards the stream to the cluster over the worker's own upstream pool, as an Envoy
// worker does, and streams the response back. It returns the status and response flags.
func (h *hcm) proxy(st *stream, cl *cluster) (int, string) {
	sc := st.sc
	up := cl.pools[sc.w.ID]
	if up.local != nil {
		return h.proxyLocal(st, cl, up)
	}
	req, err := upstreamRequest(st, cl)
	if err != nil {
		_ = st.respond(http.StatusBadRequest, "bad request")
		return http.StatusBadRequest, "DPE"
	}
	t0 := time.Now()
	resp, err := up.roundTrip(req)
	if err != nil {
		return noHead(st)
	}
	defer resp.Body.Close()
	defer func() { up.rqDone(resp.StatusCode, time.Since(t0)) }()
	end, err := forwardHead(st, req.Method, resp, resp.Header.Clone(), t0)
	if err != nil {
		return resp.StatusCode, "DC"
	}
	if end {
		return resp.StatusCode, "-"
	}
	return resp.StatusCode, h.copyBody(st, cl, resp)
}

// noHead ends a stream whose upstream gave no response head: the client left (DC), or Envoy's
// local 503 (UF).
func noHead(st *stream) (int, string) {
	if st.ctx.Err() != nil {
		return 0, "DC"
	}
	_ = st.respond(http.StatusServiceUnavailable, "upstream connect error or disconnect/reset before headers")
	return http.StatusServiceUnavailable, "UF"
}

// upstreamRequest is the request the worker sends the cluster: the client's, without its
// hop-by-hop fields, with its authority as Host and X-Forwarded-Proto.
func upstreamRequest(st *stream, cl *cluster) (*http.Request, error) {
	var body io.Reader = http.NoBody
	if st.hasBody {
		body = st
	}
	req, err := http.NewRequestWithContext(st.ctx, st.method, cl.scheme+"://"+cl.addr+st.path, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range st.header {
		if !hopByHop[strings.ToLower(k)] {
			req.Header[k] = vs
		}
	}
	req.Host = st.authority
	req.Header.Set("X-Forwarded-Proto", "http")
	if body != http.NoBody {
		req.ContentLength = -1
		if cl := st.header.Get("Content-Length"); cl != "" {
			req.ContentLength, _ = strconv.ParseInt(cl, 10, 64)
		}
	}
	return req, nil
}

// forwardHead sends the upstream response's head downstream (hdr: a copy of its fields the
// call may change) and reports whether it ended the stream.
func forwardHead(st *stream, method string, resp *http.Response, hdr http.Header, t0 time.Time) (bool, error) {
	hdr.Set("X-Envoy-Upstream-Service-Time", strconv.FormatInt(time.Since(t0).Milliseconds(), 10))
	hdr.Del("Content-Length") // HTTP/2 frames the body itself; the upstream's length may not survive trailers
	if resp.ContentLength >= 0 && len(resp.Trailer) == 0 {
		hdr.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	end := cannotHaveBody(method, resp)
	return end, st.writeHeader(resp.StatusCode, hdr, end)
}

// cannotHaveBody is Envoy's HTTP/1 upstream codec deciding that a response ends with its headers
// (http1/codec_impl.cc ClientConnectionImpl::cannotHaveBody, onMessageCompleteBase): the answer
// to a HEAD, a 204 or 304, or a 2xx and above with a zero Content-Length and no chunking. The
// downstream HEADERS then carry END_STREAM, and no DATA follows.
func cannotHaveBody(method string, resp *http.Response) bool {
	switch {
	case method == http.MethodHead, resp.StatusCode == http.StatusNoContent, resp.StatusCode == http.StatusNotModified:
		return true
	}
	return resp.StatusCode >= http.StatusOK && resp.ContentLength == 0 && len(resp.TransferEncoding) == 0
}

// copyBody streams the upstream body downstream, in the reads the connection gives.
func (h *hcm) copyBody(st *stream, cl *cluster, resp *http.Response) string {
	r := bodyRelay{st: st, cl: cl, m: h.pod.model}
	for {
		// A buffer only while a read's bytes are on their way: thousands of streams may be
		// copying at once (a dispatch's responses all start when it has flushed), and each
		// would otherwise keep one for as long as its body lasts.
		bp := copyBufs.Get().(*[]byte)
		t0 := time.Now()
		n, rerr := resp.Body.Read(*bp)
		var werr error
		if n > 0 {
			werr = r.relay((*bp)[:n], time.Since(t0))
		}
		copyBufs.Put(bp)
		if werr != nil {
			return "DC"
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if errors.Is(rerr, context.Canceled) || st.ctx.Err() != nil {
				return "DC"
			}
			st.reset(http2.ErrCodeInternal) // the upstream broke off mid-body
			return "UPE"
		}
	}
	return r.end(resp.Trailer)
}

// bodyRelay forwards a response body's upstream reads downstream, booking the worker's per-KiB
// cost as it goes and counting a flow-control pause each time the connection's write buffer
// made it stop reading the upstream.
type bodyRelay struct {
	st    *stream
	cl    *cluster
	m     Model
	owed  time.Duration
	reads int
}

// relay forwards one read, which reached the stream after it waited waited for it.
func (r *bodyRelay) relay(p []byte, waited time.Duration) error {
	st, cl := r.st, r.cl
	sc := st.sc
	n := int64(len(p))
	cl.RxBuffered.Add(n)
	cl.RxBytes.Add(n)
	msg := r.m.ResponseRead(r.reads, waited)
	r.owed += r.m.Body(n) + msg
	r.reads++
	// A message is forwarded once the worker has done it; a body's bytes are booked in
	// batches as they go.
	if r.owed >= 50*time.Microsecond || msg > 0 {
		_ = sc.w.Serve(st.ctx, sc, r.owed)
		r.owed = 0
	}
	paused, err := st.writeData(p, false)
	cl.RxBuffered.Add(-n)
	if paused {
		cl.PausedReading.Inc()
		cl.ResumedReading.Inc()
	}
	return err
}

// end books what is owed and ends the stream, with the upstream's trailers when it sent any;
// it returns the response flags.
func (r *bodyRelay) end(trailer http.Header) string {
	st := r.st
	if r.owed > 0 {
		_ = st.sc.w.Serve(st.ctx, st.sc, r.owed)
	}
	if len(trailer) > 0 {
		if err := st.writeTrailers(trailer); err != nil {
			return "DC"
		}
		return "-"
	}
	if _, err := st.writeData(nil, true); err != nil {
		return "DC"
	}
	return "-"
}
