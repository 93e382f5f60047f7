package emulator

import (
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"
)

// Request header validation as Envoy 1.35 runs it over oghttp2 (quiche/http2/adapter/
// header_validator.cc: HeaderValidator::ValidateSingleHeader, FinishHeaderBlock; Envoy leaves
// validate_http_headers on and allow_obs_text on), then Envoy's own limits as it saves each
// header (codec_impl.cc ConnectionImpl::saveHeader: max_request_headers_kb, max_headers_count).
// nghttp2 (lib/nghttp2_http.c nghttp2_http_on_header, nghttp2_http_on_request_headers) gives
// the same answers to the same requests but two: it rejects a pseudo-header after a regular
// header, which oghttp2 does not check (it refuses only :authority after host, as a second
// authority), and compares te case-insensitively.

type headerResult int

const (
	headerOK        headerResult = iota
	headerSkip                   // dropped without a word (a repeated, equal content-length)
	headerInvalid                // HEADER_FIELD_INVALID: an invalid request (Envoy's onInvalidFrame)
	headerRST                    // HEADER_RST_STREAM: the stream is reset with INTERNAL_ERROR
	headerMessaging              // HEADER_HTTP_MESSAGING: the block as a whole is not a valid request
)

// Envoy's defaults for the request's headers (HttpConnectionManager max_request_headers_kb,
// HttpProtocolOptions max_headers_count), which Istio leaves alone.
const (
	maxRequestHeadersKB = 60
	maxHeadersCount     = 100
)

// headerCheck validates one header block.
type headerCheck struct {
	nghttp2   bool
	trailers  bool
	endStream bool // the block's HEADERS ends the stream
	h         *hcm

	pseudo        map[string]int
	unknownExtra  bool
	regularSeen   bool
	authority     bool // :authority or host seen (HeaderValidator's TAG_AUTHORITY)
	method, path  string
	contentLength int64 // -1: none
	bytes, count  int   // what Envoy has saved
	maxBytes      int
}

func (c *headerCheck) start(codec string, trailers, endStream bool, h *hcm) {
	*c = headerCheck{nghttp2: codec == CodecNghttp2, trailers: trailers, endStream: endStream, h: h,
		pseudo: map[string]int{}, contentLength: -1, maxBytes: maxRequestHeadersKB * 1024}
}

// field validates one field as it is decoded.
func (c *headerCheck) field(f hpack.HeaderField) headerResult {
	name, value := f.Name, f.Value
	if name == "" {
		return headerInvalid
	}
	if len(name)+len(value) > c.maxBytes { // oghttp2's max_header_field_size
		return headerRST
	}
	if !validValue(value) {
		return headerInvalid
	}
	if name[0] == ':' {
		if r := c.pseudoField(name, value); r != headerOK {
			return r
		}
	} else {
		c.regularSeen = true
		if r := c.regularField(name, value); r != headerOK {
			return r
		}
	}
	// Envoy saves the header and checks its limits.
	c.bytes += len(name) + len(value)
	c.count++
	if c.bytes > c.maxBytes || c.count > maxHeadersCount {
		c.h.HeaderOverflow.Inc()
		return headerRST
	}
	return headerOK
}

func (c *headerCheck) pseudoField(name, value string) headerResult {
	if c.nghttp2 && c.regularSeen {
		return headerInvalid // NGHTTP2_HTTP_FLAG_PSEUDO_HEADER_DISALLOWED
	}
	if !validName(name[1:]) {
		return headerInvalid
	}
	switch name {
	case ":method":
		if !isToken(value) {
			return headerInvalid
		}
		c.method = value
	case ":authority":
		if !validAuthority(value) {
			return headerInvalid
		}
		if c.authority && c.pseudo[":authority"] == 0 {
			// A host header has already set the authority tag, so this :authority is a
			// duplicate pseudo-header (RecordPseudoHeader: TAG_UNKNOWN_EXTRA) and the block
			// fails FinishHeaderBlock: a malformed request (Envoy's
			// HostBeforeAuthorityIsRejected). nghttp2 refused it above, after a regular header.
			c.unknownExtra = true
		}
		c.authority = true
	case ":path":
		if value == "" || strings.ContainsAny(value, " \t") {
			return headerInvalid
		}
		c.path = value
	case ":scheme", ":protocol", ":status":
	default:
		c.unknownExtra = true
		if c.nghttp2 {
			return headerInvalid
		}
		return headerOK
	}
	c.pseudo[name]++
	if c.pseudo[name] > 1 {
		c.unknownExtra = true
		if c.nghttp2 {
			return headerInvalid
		}
	}
	if c.nghttp2 && name == ":status" {
		return headerInvalid
	}
	return headerOK
}

// hop-by-hop fields HTTP/2 forbids (GetInvalidHttp2HeaderSet, and upgrade).
var connectionSpecific = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true}

func (c *headerCheck) regularField(name, value string) headerResult {
	if !validName(name) {
		return headerInvalid
	}
	switch {
	case connectionSpecific[name]:
		return headerInvalid
	case name == "te":
		if value != "trailers" && !(c.nghttp2 && strings.EqualFold(value, "trailers")) {
			return headerInvalid
		}
	case name == "host":
		if !validAuthority(value) {
			return headerInvalid
		}
		c.authority = true
	case name == "content-length":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 || value == "" || value[0] == '+' {
			return headerInvalid
		}
		if c.contentLength >= 0 {
			if n != c.contentLength {
				return headerInvalid
			}
			return headerSkip
		}
		c.contentLength = n
	}
	return headerOK
}

// finish is FinishHeaderBlock: a request needs exactly :method, :scheme, :path and an
// authority (:authority or host); trailers may carry no pseudo-header, and for nghttp2 must end
// the stream (nghttp2_http_on_trailer_headers).
func (c *headerCheck) finish() bool {
	if c.trailers {
		return len(c.pseudo) == 0 && !c.unknownExtra && (c.endStream || !c.nghttp2)
	}
	if c.unknownExtra || c.pseudo[":status"] > 0 {
		return false
	}
	if c.method == "CONNECT" {
		return c.authority && c.pseudo[":method"] == 1 && len(c.pseudo) == 2 && c.pseudo[":authority"] == 1
	}
	if c.pseudo[":protocol"] > 0 || c.pseudo[":method"] != 1 || c.pseudo[":scheme"] != 1 || c.pseudo[":path"] != 1 || !c.authority {
		return false
	}
	if c.path == "*" {
		return c.method == "OPTIONS"
	}
	return strings.HasPrefix(c.path, "/")
}

// validName: a lowercase RFC 9110 token (HeaderValidator's kHttp2HeaderNameAllowedChars).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b >= 'A' && b <= 'Z' || !tokenChar(b) {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar(s[i]) {
			return false
		}
	}
	return true
}

func tokenChar(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// validValue: tab, space, visible ASCII and obs-text; no CR, LF, NUL or other control bytes.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// validAuthority: HeaderValidator's authority characters.
func validAuthority(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || strings.IndexByte("-._~%!$&'()[]*+,;=:", b) >= 0) {
			return false
		}
	}
	return true
}
