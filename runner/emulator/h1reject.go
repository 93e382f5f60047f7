package emulator

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// A connection that does not open with HTTP/2's preface. Envoy's connection manager, with the
// codec_type AUTO Istio's gateway listeners use, gives such a connection to its HTTP/1 codec
// (conn_manager_utility.cc ConnectionManagerUtility::determineNextProtocol, autoCreateCodec):
// a request line that is not HTTP/1 gets the codec's local reply, 400 Bad Request, and the
// connection closes after flushing it (downstream_cx_protocol_error). Over TLS the codec follows
// ALPN (h2), and oghttp2 rejects the preface (ProcessBytesImpl, kInvalidConnectionPreface): the
// connection closes with nothing sent. HTTP/1.1 itself is not modelled: a well-formed HTTP/1
// request is told so and the connection closes.

// rejectAsHTTP1 answers what arrived instead of the preface.
func (sc *serverConn) rejectAsHTTP1(got []byte, readErr error) {
	h := sc.h
	// Over TLS ALPN chose HTTP/2; in the clear, AUTO did when the bytes start as the preface.
	if sc.h.pod.pool.tls != nil || bytes.HasPrefix(got, []byte("PRI * HTTP/2")) {
		sc.countCodec(true)
		h.ProtocolErrors.Inc()
		sc.closeAfterFlush()
		return
	}
	// Read on to the end of the request line, as the HTTP/1 parser would.
	for !bytes.Contains(got, []byte("\r\n")) && len(got) < 8<<10 && readErr == nil {
		data, err := sc.in.take(sc.ctx)
		got = append(got, data...)
		sc.in.release(data)
		readErr = err
	}
	sc.countCodec(false)
	line, _, _ := bytes.Cut(got, []byte("\r\n"))
	status, body := http.StatusBadRequest, "Bad Request"
	if f := bytes.Fields(line); len(f) == 3 && bytes.HasPrefix(f[2], []byte("HTTP/1.")) {
		status, body = http.StatusHTTPVersionNotSupported, "igwlab: the local target models HTTP/2 only; use h2c with prior knowledge (curl --http2-prior-knowledge)"
	} else {
		h.ProtocolErrors.Inc()
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("content-length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("content-type: text/plain\r\n")
	b.WriteString("date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n")
	b.WriteString("server: istio-envoy\r\nconnection: close\r\n\r\n")
	b.WriteString(body)
	h.RqTotal.Inc()
	h.Charge(status)
	sc.wmu.Lock()
	_, _ = sc.encode(b.Bytes())
	sc.flush()
	sc.wmu.Unlock()
	sc.closeAfterFlush()
}
