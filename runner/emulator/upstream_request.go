package emulator

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// serverRequest is the request go-httpbin's handler gets in the process: what net/http's server
// would parse (server.go readRequest) from what net/http's Transport writes for req
// (request.go Request.write, transfer.go transferWriter), so the handler sees the same fields.
// It also returns the request head's size on the wire, which the replica's ztunnel counts. An
// error is the Transport refusing to send the request (transport.go roundTrip's header checks).
func serverRequest(req *http.Request, body *localBody) (*http.Request, int64, error) {
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, 0, fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, 0, fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	host, err := httpguts.PunycodeHostPort(req.Host)
	if err != nil {
		return nil, 0, err
	}
	if !httpguts.ValidHostHeader(host) {
		host = "" // Request.write sends an empty Host rather than an altered one
	}
	ruri := req.URL.RequestURI()
	u, err := url.ParseRequestURI(ruri)
	if err != nil {
		return nil, 0, err
	}
	// The head as written: request line, Host, User-Agent (the first one, or Go's), the
	// other fields trimmed, then the body's framing.
	wire := int64(len(req.Method) + 1 + len(ruri) + len(" HTTP/1.1\r\n") + len("Host: \r\n") + len(host))
	h := make(http.Header, len(req.Header)+2)
	ua := "Go-http-client/1.1"
	if _, ok := req.Header["User-Agent"]; ok {
		ua = req.Header.Get("User-Agent")
	}
	if ua != "" {
		h["User-Agent"] = []string{ua}
		wire += int64(len("User-Agent: \r\n") + len(ua))
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // Request.write's reqWriteExcludeHeader
		}
		for _, v := range vs {
			v = textproto.TrimString(headerNewlineToSpace.Replace(v))
			h[k] = append(h[k], v)
			wire += int64(len(k) + 4 + len(v))
		}
	}
	length := body.length
	switch {
	case length > 0 || (length == 0 && sendsZeroLength(req.Method)):
		v := strconv.FormatInt(length, 10)
		h["Content-Length"] = []string{v}
		wire += int64(len("Content-Length: \r\n") + len(v))
	case length < 0:
		wire += int64(len("Transfer-Encoding: chunked\r\n"))
	}
	wire += 2
	// The server's own touches (request.go readRequest, fixPragmaCacheControl).
	if p := h["Pragma"]; len(p) > 0 && p[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	sr := &http.Request{Method: req.Method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Host: host, RequestURI: ruri, RemoteAddr: body.from, ContentLength: length, Body: http.NoBody}
	if length != 0 {
		sr.Body = body
	}
	if length < 0 {
		sr.TransferEncoding = []string{"chunked"}
	}
	return sr.WithContext(req.Context()), wire, nil
}

var headerNewlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// sendsZeroLength is the Transport sending "Content-Length: 0" for an empty body
// (transfer.go shouldSendContentLength): many servers expect one for these methods.
func sendsZeroLength(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// maxPostHandlerReadBytes is how much of a request body net/http's server reads past what the
// handler read, to keep the connection (server.go): more, and it closes the connection instead.
const maxPostHandlerReadBytes = 256 << 10

// localBody is the request body as the server's handler reads it: the stream's body, limited to
// its Content-Length when it has one (net/http's body over an io.LimitedReader) or to the end of
// the stream when chunked, and counted on the wire as the Transport frames it.
type localBody struct {
	st     *stream
	from   string
	length int64 // the Content-Length the Transport sends (-1: chunked)
	left   int64 // bytes to read when length >= 0
	sawEOF bool
	closed bool
	z      *Ztunnel // the replica's, which counts the body's bytes on the wire as they cross
}

// newLocalBody is the body the Transport would send for the stream (request.go
// outgoingLength, transfer.go probeRequestBody): the client's Content-Length, or chunked, or
// none when the stream's body has already ended empty.
func newLocalBody(st *stream, length int64, from string) *localBody {
	b := &localBody{st: st, from: from, length: length, left: length}
	if length < 0 && st.bodyEndedEmpty() {
		b.length, b.left = 0, 0
	}
	return b
}

func (b *localBody) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.sawEOF:
		return 0, io.EOF
	case b.length >= 0 && b.left == 0:
		b.sawEOF = true
		return 0, io.EOF
	}
	if b.length >= 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.st.Read(p)
	if b.length >= 0 {
		b.left -= int64(n)
		b.z.received.Add(int64(n))
		switch {
		case b.left == 0:
			b.sawEOF, err = true, io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	if n > 0 { // a chunk for each of the Transport's reads of the stream
		b.z.received.Add(int64(len(strconv.FormatInt(int64(n), 16)) + 4 + n))
	}
	if err == io.EOF {
		b.sawEOF = true
		b.z.received.Add(int64(len("0\r\n\r\n")))
	}
	return n, err
}

// Close is the handler closing the body; the server's own read of the rest is discard.
func (b *localBody) Close() error {
	b.closed = true
	return nil
}

// discard reads up to n bytes of what the handler left unread (server.go
// chunkWriter.writeHeader and body.Close): whether it reached the end.
func (b *localBody) discard(n int64) (ended bool, err error) {
	if b.sawEOF {
		return true, nil
	}
	closed := b.closed
	b.closed = false
	defer func() { b.closed = closed }()
	m, err := io.CopyN(io.Discard, b, n)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err == nil && m == n && b.sawEOF {
		return true, nil
	}
	return false, err
}

// unread is what is left of a body with a length (-1 when chunked): the server does not read
// past maxPostHandlerReadBytes of it to keep the connection.
func (b *localBody) unread() int64 {
	if b.length < 0 {
		return -1
	}
	return b.left
}
