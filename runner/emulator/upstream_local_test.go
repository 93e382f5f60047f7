package emulator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// exchangeCase is one request through the gateway to go-httpbin.
type exchangeCase struct {
	method, path string
	body         []byte
	unsized      bool // the body goes without a content-length (chunked on the HTTP/1.1 hop)
	header       http.Header
}

// exchangeResult is what the client saw, the fields that differ by the clock left out.
type exchangeResult struct {
	status  int
	header  http.Header
	body    []byte
	trailer http.Header
}

func (r exchangeResult) String() string {
	return fmt.Sprintf("%d %v trailer %v body %d bytes %q", r.status, r.header, r.trailer, len(r.body), r.body[:min(len(r.body), 300)])
}

func exchangeCases() []exchangeCase {
	big := bytes.Repeat([]byte("0123456789abcdef"), 70_000/16)
	h := func(kv ...string) http.Header {
		hh := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			hh.Add(kv[i], kv[i+1])
		}
		return hh
	}
	return []exchangeCase{
		{method: "GET", path: "/get"},
		{method: "GET", path: "/headers", header: h("X-Multi", "a", "X-Multi", "b", "Pragma", "no-cache", "X-Space", "  padded  ")},
		{method: "GET", path: "/user-agent", header: h("User-Agent", "")},
		{method: "GET", path: "/user-agent", header: h("User-Agent", "curl/8.5.0")},
		{method: "POST", path: "/post", body: []byte(`{"a":1}`), header: h("Content-Type", "application/json")},
		{method: "POST", path: "/anything", body: []byte("form=1&b=2"), unsized: true, header: h("Content-Type", "application/x-www-form-urlencoded")},
		{method: "PUT", path: "/put", body: big},
		{method: "PATCH", path: "/anything/unsized", body: big, unsized: true},
		{method: "POST", path: "/status/201", body: big},                  // a body the handler leaves unread
		{method: "POST", path: "/status/200", body: bytes.Repeat(big, 5)}, // more than the server drains: refused unread
		{method: "POST", path: "/upload", body: bytes.Repeat(big, 4), unsized: true},
		{method: "POST", path: "/anything"},
		{method: "DELETE", path: "/delete"},
		{method: "HEAD", path: "/get"},
		{method: "HEAD", path: "/bytes/3000?seed=3"},
		{method: "GET", path: "/status/204"},
		{method: "GET", path: "/status/304"},
		{method: "GET", path: "/status/418"},
		{method: "GET", path: "/status/503"},
		{method: "GET", path: "/bytes/2048?seed=1"},
		{method: "GET", path: "/bytes/2049?seed=1"},
		{method: "GET", path: "/bytes/200000?seed=2"},
		{method: "GET", path: "/stream-bytes/100000?seed=4&chunk_size=1000"},
		{method: "GET", path: "/stream/3"},
		{method: "GET", path: "/drip?duration=0.05&numbytes=5&delay=0"},
		{method: "GET", path: "/trailers?X-One=1&X-Two=2"},
		{method: "GET", path: "/range/5000", header: h("Range", "bytes=100-2999")},
		{method: "GET", path: "/etag/abc", header: h("If-None-Match", `"abc"`)},
		{method: "GET", path: "/response-headers?X-Echo=yes&X-Echo=twice"},
		{method: "GET", path: "/html"},
		{method: "GET", path: "/base64/SFRUUEJJTiBpcyBhd2Vzb21l"},
		{method: "GET", path: "/gzip"},
		{method: "GET", path: "/redirect-to?url=/get&status_code=307"},
		{method: "GET", path: "/no-such-path"},
	}
}

// runExchanges sends the cases one after the other through a one-pod, one-worker pool.
func runExchanges(t *testing.T, overConns bool) ([]exchangeResult, *Pool) {
	t.Helper()
	p := testPool(t, Config{Seed: 1, upstreamOverConns: overConns}, stacks.Knobs{})
	c := h2cClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var out []exchangeResult
	for _, ec := range exchangeCases() {
		var body io.Reader
		if ec.body != nil {
			body = bytes.NewReader(ec.body)
			if ec.unsized {
				body = io.MultiReader(body) // no length the client could know
			}
		}
		req, err := http.NewRequest(ec.method, "http://"+p.VIP()+ec.path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "httpbin.igw-test"
		for k, vs := range ec.header {
			req.Header[k] = vs
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", ec.method, ec.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: body: %v", ec.method, ec.path, err)
		}
		hdr := resp.Header.Clone()
		hdr.Del("Date")
		hdr.Del("X-Envoy-Upstream-Service-Time")
		out = append(out, exchangeResult{status: resp.StatusCode, header: hdr, body: b, trailer: resp.Trailer})
	}
	return out, p
}

// upstreamCounts are what the lab reads of the hop to go-httpbin.
type upstreamCounts struct {
	rq, rq2xx, rq4xx, rq5xx, cx, cxActive, rxBytes int64
	ztOpened, ztClosed, ztSent, ztReceived         int64
}

func countsOf(t *testing.T, p *Pool) upstreamCounts {
	t.Helper()
	cl := p.Pods()[0].clusters[ClusterHTTPBin]
	deadline := time.Now().Add(5 * time.Second)
	open := func() int64 {
		var n int64
		for _, z := range p.Ztunnels() {
			n += z.opened.Load() - z.closed.Load()
		}
		return n
	}
	// A request's counts close after its last byte is out, and net/http's server closes a
	// connection it will not keep half a second after its last response (server.go
	// closeWriteAndWait).
	for (cl.RqActive.Value() != 0 || open() != cl.CxActive.Value()) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	u := upstreamCounts{rq: cl.RqTotal.Value(), rq2xx: cl.Rq2xx.Value(), rq4xx: cl.Rq4xx.Value(), rq5xx: cl.Rq5xx.Value(),
		cx: cl.CxTotal.Value(), cxActive: cl.CxActive.Value(), rxBytes: cl.RxBytes.Value()}
	for _, z := range p.Ztunnels() {
		u.ztOpened += z.opened.Load()
		u.ztClosed += z.closed.Load()
		u.ztSent += z.sent.Load()
		u.ztReceived += z.received.Load()
	}
	return u
}

// refusedUnread is the body the server refuses to drain (over 256 KiB unread), which over a
// connection the Transport still sends until the server closes it, and in the process stays
// with the stream: the one count the two paths do not share.
const refusedUnread = 5 * 70_000

// The hop in the process must answer as the hop over connections it replaces: the same
// responses byte for byte (status, fields, body, trailers), and the same requests,
// connections and bytes in the cluster's and the replica's ztunnel's counts.
func TestInProcessExchangeAsOverConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("two pools and 34 exchanges each")
	}
	local, lp := runExchanges(t, false)
	conns, cp := runExchanges(t, true)
	for i, ec := range exchangeCases() {
		l, c := local[i], conns[i]
		if l.String() != c.String() || !bytes.Equal(l.body, c.body) {
			t.Errorf("%s %s:\n in process:       %s\n over connections: %s", ec.method, ec.path, l, c)
		}
	}
	lc, cc := countsOf(t, lp), countsOf(t, cp)
	t.Logf("in process: %+v", lc)
	t.Logf("over connections: %+v", cc)
	if lc.rq != cc.rq || lc.rq2xx != cc.rq2xx || lc.rq4xx != cc.rq4xx || lc.rq5xx != cc.rq5xx ||
		lc.cx != cc.cx || lc.cxActive != cc.cxActive || lc.rxBytes != cc.rxBytes || lc.ztOpened != cc.ztOpened {
		t.Errorf("cluster counts differ:\n in process:       %+v\n over connections: %+v", lc, cc)
	}
	for _, b := range []struct {
		name     string
		got, was int64
	}{{"ztunnel sent", lc.ztSent, cc.ztSent}, {"ztunnel received", lc.ztReceived + refusedUnread, cc.ztReceived}} {
		if math.Abs(float64(b.got-b.was)) > 0.01*float64(b.was) {
			t.Errorf("%s: %d in process, %d over connections (more than 1%% apart)", b.name, b.got, b.was)
		}
	}
}

// A client that leaves in the middle of an exchange leaves the same counts on both paths: a
// request reset before its head is a failed upstream request, one reset in its body a
// finished one, and neither connection is kept.
func TestInProcessExchangeWhenTheClientLeaves(t *testing.T) {
	if testing.Short() {
		t.Skip("two pools, each waiting on go-httpbin's /delay and /drip")
	}
	leave := func(overConns bool) upstreamCounts {
		p := testPool(t, Config{Seed: 1, upstreamOverConns: overConns}, stacks.Knobs{})
		c := h2cClient()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.VIP()+"/delay/2", nil)
		if _, err := c.Do(req); err == nil {
			t.Fatal("/delay/2 answered within 100 ms")
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		req, _ = http.NewRequestWithContext(ctx2, "GET", "http://"+p.VIP()+"/drip?duration=2&numbytes=10&delay=0", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, one); err != nil {
			t.Fatal(err)
		}
		cancel2()
		resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if u := countsOf(t, p); u.cxActive == 0 && u.ztClosed == u.ztOpened {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		u := countsOf(t, p)
		u.rxBytes, u.ztSent, u.ztReceived = 0, 0, 0 // how far /drip got is the clock's
		return u
	}
	local, conns := leave(false), leave(true)
	if local != conns {
		t.Errorf("counts after the client left:\n in process:       %+v\n over connections: %+v", local, conns)
	}
	if local.rq5xx != 1 || local.rq2xx != 1 || local.cxActive != 0 {
		t.Errorf("in process: %+v, want one 5xx (reset before the head), one 2xx, no connection open", local)
	}
}
