package emulator

import (
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// decide writes the response head as net/http's server does when its first bytes leave the 2
// KiB buffer (server.go chunkWriter.writeHeader for an HTTP/1.1 request with keep-alives): p is
// the start of the body it is written with.
func (x *localExchange) decide(p []byte) {
	x.decided = true
	h := x.snap
	isHEAD := x.req.Method == http.MethodHead
	trailers := false
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			delete(h, k)
			trailers = true
		}
	}
	for _, v := range h["Trailer"] {
		trailers = true
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(textproto.TrimString(k))
			if k != "" && httpguts.ValidTrailerHeader(k) {
				x.trailers = append(x.trailers, k)
			}
		}
	}
	te := h.Get("Transfer-Encoding")
	hasTE := te != ""
	x.length = x.declared
	_, hasLengthField := h["Content-Length"]
	if x.handlerDone && !trailers && !hasTE && bodyAllowedForStatus(x.status) && !hasLengthField && (!isHEAD || len(p) > 0) {
		x.length = int64(len(p))
		h.Set("Content-Length", strconv.Itoa(len(p)))
	}
	if h.Get("Connection") == "close" {
		x.closeAfter = true
	}
	x.drainRequest(h)
	if bodyAllowedForStatus(x.status) {
		_, haveType := h["Content-Type"]
		if h.Get("Content-Encoding") == "" && !haveType && !hasTE && len(p) > 0 {
			h.Set("Content-Type", http.DetectContentType(p))
		}
	} else {
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
		if x.status == http.StatusNotModified {
			h.Del("Content-Type")
		}
	}
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	hasCL := x.length != -1
	if hasCL && hasTE && te != "identity" {
		h.Del("Content-Length")
		hasCL = false
	}
	switch {
	case isHEAD || !bodyAllowedForStatus(x.status), hasCL:
		h.Del("Transfer-Encoding")
	case hasTE && te == "identity":
		x.closeAfter = true
		h.Del("Transfer-Encoding")
	default:
		x.chunking = true
		h.Set("Transfer-Encoding", "chunked")
	}
	if x.chunking {
		h.Del("Content-Length")
		x.length = -1
	}
	if x.closeAfter && !httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		h.Set("Connection", "close")
	}
	x.addSent(headLen(x.status, h))
}

// drainRequest is the server reading what the handler left of the request body as the head
// goes out, so that the connection can carry the next request: at most 256 KiB, or it closes
// the connection after the response instead.
func (x *localExchange) drainRequest(h http.Header) {
	b := x.body
	if x.req.ContentLength == 0 || x.closeAfter {
		return
	}
	tooBig := false
	switch {
	case b.closed:
		if !b.sawEOF {
			x.closeAfter = true // the handler closed the body before its end
		}
	case b.unread() >= maxPostHandlerReadBytes:
		tooBig = true
	default:
		ended, err := b.discard(maxPostHandlerReadBytes + 1)
		switch {
		case err != nil:
			x.closeAfter = true
		case !ended:
			tooBig = true
		}
	}
	if tooBig {
		x.closeAfter = true
		h.Del("Connection")
		h.Set("Connection", "close")
	}
}

// errMalformedHead is the Transport failing to read the head the server wrote.
var errMalformedHead = errors.New("net/http: malformed response head")

// sendHead is the head reaching the Transport and the stream: the response the Transport
// reads from it (transfer.go readTransfer), forwarded as copyBody's caller forwards it. It
// reports false when the head did not make it downstream.
func (x *localExchange) sendHead() bool {
	resp, err := transportResponse(x.status, x.snap, x.req.Method, x.chunking, x.trailers)
	if err != nil {
		x.failed, x.flags = err, "UF"
		return false
	}
	if x.st.ctx.Err() != nil { // the Transport gave up before the head arrived
		x.failed, x.flags = x.st.ctx.Err(), "DC"
		return false
	}
	x.resp = resp
	end, err := forwardHead(x.st, x.req.Method, resp, resp.Header, x.t0) // the fields are this exchange's own
	x.ended = end
	if err != nil {
		x.failed, x.flags = err, "DC"
		return false
	}
	return true
}

// transportResponse is what net/http's Transport returns for the head the server wrote: fields
// canonical and trimmed, the framing fields consumed, the declared trailers' names.
func transportResponse(status int, wire http.Header, method string, chunked bool, declared []string) (*http.Response, error) {
	h := make(http.Header, len(wire))
	for k, vs := range wire {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, errMalformedHead
		}
		ck := http.CanonicalHeaderKey(k)
		for _, v := range vs {
			v = textproto.TrimString(headerNewlineToSpace.Replace(v))
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, errMalformedHead
			}
			h[ck] = append(h[ck], v)
		}
	}
	resp := &http.Response{StatusCode: status, Header: h, ContentLength: -1}
	if te, ok := h["Transfer-Encoding"]; ok {
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return nil, errMalformedHead // unsupported transfer encoding
		}
		delete(h, "Transfer-Encoding")
	}
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
		h.Del("Content-Length")
		if _, ok := h["Trailer"]; ok {
			h.Del("Trailer")
			for _, k := range declared {
				if resp.Trailer == nil {
					resp.Trailer = http.Header{}
				}
				resp.Trailer[k] = nil
			}
		}
		return resp, nil
	}
	switch {
	case method == http.MethodHead:
	case status/100 == 1, status == http.StatusNoContent, status == http.StatusNotModified:
		resp.ContentLength = 0
		return resp, nil
	}
	if cl := h.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return nil, errMalformedHead
		}
		resp.ContentLength = n
	}
	return resp, nil
}
