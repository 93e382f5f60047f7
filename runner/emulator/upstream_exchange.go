package emulator

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// localExchange is one request to a replica in the process: go-httpbin's handler writes to it
// as to net/http's server, and it forwards what the Transport would have read, when the
// Transport would have read it. The server holds the handler's first 2 KiB before it writes a
// head (server.go, bufferBeforeChunkingSize): a handler that ends within it gets a
// Content-Length, one that writes more or flushes first gets chunked framing. The head and body
// then wait in the connection's 4 KiB buffer (newBufioWriterSize(checkConnErrorWriter, 4<<10))
// until it fills, the handler flushes, or the handler ends: that is when the stream's worker
// reads them from the upstream, in reads of at most 16 KiB, as copyBody does.
type localExchange struct {
	st    *stream
	up    *upstreamPool
	lc    *localConn
	req   *http.Request // as the server parsed it
	body  *localBody
	t0    time.Time
	relay bodyRelay

	header   http.Header // the handler's
	snap     http.Header // the header as WriteHeader took it
	status   int
	declared int64 // the handler's Content-Length, -1 without one
	written  int64 // what the handler wrote, as the server counts it
	// buf holds what the server's buffers hold, from heldBufs while it holds anything: a
	// stream that waits on its handler (an event stream, /delay) keeps no buffer.
	buf []byte

	handlerDone bool
	decided     bool // the server has written the head (chunkWriter.writeHeader)
	chunking    bool
	closeAfter  bool
	length      int64    // the response's Content-Length, -1 without one
	trailers    []string // declared in Trailer
	wireBody    int64    // body bytes the server wrote

	resp    *http.Response // what the Transport read, once the head has crossed
	ended   bool           // the stream ended with the head
	failed  error          // the head could not cross or the stream is gone
	flags   string
	lastOut time.Time
}

// bufferBeforeChunking and connBuffer are net/http's server buffers (server.go).
const (
	bufferBeforeChunking = 2048
	connBuffer           = 4 << 10
)

var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, connBuffer); return &b }}

// hold appends p to what the server's buffers hold (never past connBuffer: Write forwards
// first).
func (x *localExchange) hold(p []byte) {
	if x.buf == nil {
		x.buf = (*heldBufs.Get().(*[]byte))[:0]
	}
	x.buf = append(x.buf, p...)
}

// release gives the held buffer back once its bytes have gone.
func (x *localExchange) release() {
	if x.buf != nil {
		b := x.buf[:0]
		heldBufs.Put(&b)
		x.buf = nil
	}
}

func (x *localExchange) Header() http.Header { return x.header }

// WriteHeader takes the status and a copy of the header, as response.WriteHeader does;
// informational statuses go out on their own and the Transport reads past them.
func (x *localExchange) WriteHeader(code int) {
	if x.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // net/http's checkWriteHeaderCode
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		x.addSent(headLen(code, x.header))
		return
	}
	x.status = code
	x.snap = x.header.Clone()
	x.declared = -1
	if cl := x.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			x.declared = v
		} else {
			x.header.Del("Content-Length")
		}
	}
}

func (x *localExchange) Write(p []byte) (int, error) {
	if x.status == 0 {
		x.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(x.status) {
		return 0, http.ErrBodyNotAllowed
	}
	x.written += int64(len(p))
	if x.declared != -1 && x.written > x.declared {
		return 0, http.ErrContentLength
	}
	if x.failed != nil {
		return 0, x.failed
	}
	if !x.decided {
		if len(x.buf)+len(p) <= bufferBeforeChunking {
			x.hold(p)
			return len(p), nil
		}
		x.decide(sniffed(x.buf, p)) // the 2 KiB buffer flushes: the head is written
	}
	if len(x.buf)+len(p) < connBuffer {
		x.hold(p)
		return len(p), nil
	}
	x.forward(p) // the connection's buffer fills: the worker reads what crossed
	if x.failed != nil {
		return 0, x.failed
	}
	return len(p), nil
}

// Flush sends what the server holds, the head first.
func (x *localExchange) Flush() {
	if x.status == 0 {
		x.WriteHeader(http.StatusOK)
	}
	if !x.decided {
		x.decide(x.buf)
	}
	x.forward(nil)
}

// sniffed is the start of the body the head is written with: what Content-Type sniffing
// reads (DetectContentType looks at 512 bytes at most).
func sniffed(buf, p []byte) []byte {
	if len(buf) >= 512 || len(buf) == 0 {
		if len(buf) == 0 {
			return p
		}
		return buf
	}
	s := make([]byte, 0, 512)
	s = append(s, buf...)
	return append(s, p[:min(len(p), 512-len(buf))]...)
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199, status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
}

// forward hands the stream what has crossed: the head the first time, then the held bytes and
// p, in reads of at most 16 KiB. A HEAD's body is never written (chunkWriter.Write eats it).
func (x *localExchange) forward(p []byte) {
	defer x.release()
	if x.failed != nil {
		return
	}
	if x.resp == nil && !x.sendHead() {
		return
	}
	if x.req.Method == http.MethodHead || x.ended {
		return
	}
	waited := time.Since(x.lastOut)
	for _, b := range [][]byte{x.buf, p} {
		for len(b) > 0 {
			n := min(len(b), 16<<10)
			x.wireBody += int64(n)
			x.addSent(int64(n) + x.framing(n))
			if err := x.relay.relay(b[:n], waited); err != nil {
				x.failed, x.flags = err, "DC"
				return
			}
			b, waited = b[n:], 0
		}
	}
	x.lastOut = time.Now()
}

// framing is the chunked encoding's bytes around n body bytes the server wrote in its 2 KiB
// chunks.
func (x *localExchange) framing(n int) int64 {
	if !x.chunking {
		return 0
	}
	f := int64(n/bufferBeforeChunking) * int64(len("800")+4)
	if r := n % bufferBeforeChunking; r > 0 {
		f += int64(len(strconv.FormatInt(int64(r), 16)) + 4)
	}
	return f
}

func (x *localExchange) addSent(n int64) { x.lc.r.z.sent.Add(n) }

// headLen is the size of a response head on the wire: status line, fields, blank line.
func headLen(code int, h http.Header) int64 {
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return int64(len("HTTP/1.1 200 \r\n")+len(text)+2) + headerLen(h)
}

// finalTrailers are the trailers the server writes after a chunked body (server.go
// finalTrailers): the declared ones and those set with http.TrailerPrefix.
func (x *localExchange) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range x.header {
		if kk, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = http.Header{}
			}
			t[http.CanonicalHeaderKey(kk)] = vv
		}
	}
	for _, k := range x.trailers {
		for _, v := range x.header[k] {
			if t == nil {
				t = http.Header{}
			}
			t.Add(k, v)
		}
	}
	return t
}
