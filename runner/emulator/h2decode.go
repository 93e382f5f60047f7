package emulator

import (
	"encoding/binary"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 frame decoder, as Envoy 1.35's codec runs it: QUICHE's Http2FrameDecoder behind
// Http2DecoderAdapter (quiche/http2/decoder/http2_frame_decoder.cc,
// quiche/http2/core/http2_frame_decoder_adapter.cc), which OgHttp2Session drives. It takes
// the bytes a read returned, cuts them into frames, rejects what the adapter rejects before a
// frame reaches the session (OnFrameHeader, HasRequiredStreamId, OnFrameSizeError,
// OnPaddingTooLong, the CONTINUATION sequence) and decodes header blocks with HPACK as their
// fragments arrive. What a valid frame means is the session's business (h2session.go).

// frameHeader is a frame's 9-byte header.
type frameHeader struct {
	length uint32
	typ    http2.FrameType
	flags  http2.Flags
	stream uint32
}

func (h frameHeader) has(f http2.Flags) bool { return h.flags&f != 0 }

// framerError names a decoding error as the adapter does (SpdyFramerError).
type framerError int

// The adapter's errors this decoder can raise.
const (
	framerInvalidStreamID         framerError = iota + 1 // SPDY_INVALID_STREAM_ID
	framerInvalidControlFrame                            // SPDY_INVALID_CONTROL_FRAME
	framerInvalidPadding                                 // SPDY_INVALID_PADDING
	framerInvalidDataFrameFlags                          // SPDY_INVALID_DATA_FRAME_FLAGS
	framerUnexpectedFrame                                // SPDY_UNEXPECTED_FRAME
	framerControlPayloadTooLarge                         // SPDY_CONTROL_PAYLOAD_TOO_LARGE
	framerInvalidControlFrameSize                        // SPDY_INVALID_CONTROL_FRAME_SIZE
	framerOversizedPayload                               // SPDY_OVERSIZED_PAYLOAD
	framerHpack                                          // SPDY_DECOMPRESS_FAILURE and the SPDY_HPACK_* errors
)

// code is the GOAWAY code oghttp2 answers a decoding error with (oghttp2_session.cc:
// GetHttp2ErrorCode).
func (e framerError) code() http2.ErrCode {
	switch e {
	case framerControlPayloadTooLarge, framerInvalidControlFrameSize, framerOversizedPayload:
		return http2.ErrCodeFrameSize
	case framerHpack:
		return http2.ErrCodeCompression
	default:
		return http2.ErrCodeProtocol
	}
}

// priorityFields are a HEADERS or PRIORITY frame's priority.
type priorityFields struct {
	dependency uint32
	exclusive  bool
	weight     uint8
}

// frameVisitor receives what the decoder reads, in the order the adapter calls
// spdy::SpdyFramerVisitorInterface. A method that returns false stops decoding, as
// OgHttp2Session's decoder_.StopProcessing() does once it has latched an error.
type frameVisitor interface {
	onCommonHeader(h frameHeader) bool
	onDataFrameHeader(h frameHeader) bool
	onStreamFrameData(stream uint32, data []byte) bool
	onStreamPadding(stream uint32, n int) bool
	onDataEnd(h frameHeader, payload int) bool
	onStreamEnd(stream uint32) bool
	onHeaders(h frameHeader, prio *priorityFields) bool
	onContinuation(h frameHeader) bool
	onHeaderBlockStart(stream uint32) bool
	onHeaderField(stream uint32, f hpack.HeaderField) bool
	onHeaderFrameEnd(stream uint32) bool
	onPriority(stream uint32, p priorityFields) bool
	onRstStream(stream uint32, code http2.ErrCode) bool
	onSettings() bool
	onSetting(s http2.Setting) bool
	onSettingsEnd() bool
	onSettingsAck() bool
	onPing(data [8]byte, ack bool) bool
	onGoAway(last uint32, code http2.ErrCode, debug []byte) bool
	onWindowUpdate(stream uint32, increment uint32) bool
	onPushPromise(stream, promised uint32) bool
	onUnknownFrame(h frameHeader) bool
	// onError is a decoding error; why is nghttp2's reason text for its GOAWAY.
	onError(e framerError, why string)
	// onBadStreamID is a frame whose stream id its type forbids.
	onBadStreamID(h frameHeader)
}

// frameDecoder cuts a connection's input into frames for a visitor. With nghttp2 it checks a
// frame's length before its stream id, as nghttp2_session_mem_recv2 does on reading a header.
type frameDecoder struct {
	v        frameVisitor
	nghttp2  bool
	maxFrame uint32 // our SETTINGS_MAX_FRAME_SIZE: Envoy never raises it from 16384
	buf      []byte // input not yet decoded (a partial frame)
	checked  bool   // the header of the frame at buf's start passed the header checks
	stopped  bool   // an error, or the visitor, stopped decoding: input is ignored from then on

	// The header block under way: the first frame's header while CONTINUATION is expected.
	hdec       *hpack.Decoder
	block      bool
	blockFirst frameHeader
	blockStart bool // the block's first fragment has not been decoded yet
	// first is true until the first frame after the client's preface has been checked.
	first bool
}

func newFrameDecoder(v frameVisitor, codec string, maxHeaderListBytes uint32) *frameDecoder {
	d := &frameDecoder{v: v, nghttp2: codec == CodecNghttp2, maxFrame: 16384, first: true}
	d.hdec = hpack.NewDecoder(4096, nil)
	d.hdec.SetEmitEnabled(true)
	// oghttp2 buffers at most twice the header list limit of encoded HPACK data.
	d.hdec.SetMaxStringLength(2 * int(maxHeaderListBytes))
	return d
}

// stop ignores all further input (oghttp2's decoder_.StopProcessing and
// blackhole_data_on_connection_error).
func (d *frameDecoder) stop() { d.stopped = true }

// feed decodes every complete frame in p (plus what was left from the last call). It returns
// the number of bytes still held for a partial frame.
func (d *frameDecoder) feed(p []byte) int {
	if d.stopped {
		d.buf = d.buf[:0]
		return 0
	}
	d.buf = append(d.buf, p...)
	off := 0
	for !d.stopped && len(d.buf)-off >= 9 {
		h := parseFrameHeader(d.buf[off:])
		if !d.checked {
			if !d.checkHeader(h) {
				break
			}
			d.checked = true
		}
		if uint32(len(d.buf)-off-9) < h.length {
			break
		}
		payload := d.buf[off+9 : off+9+int(h.length)]
		off += 9 + int(h.length)
		d.checked = false
		d.frame(h, payload)
	}
	if d.stopped {
		d.buf = d.buf[:0]
		return 0
	}
	n := copy(d.buf, d.buf[off:])
	d.buf = d.buf[:n]
	return n
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:    http2.FrameType(b[3]),
		flags:  http2.Flags(b[4]),
		stream: binary.BigEndian.Uint32(b[5:9]) & (1<<31 - 1), // the reserved bit is ignored
	}
}

func (d *frameDecoder) fail(e framerError, why string) {
	d.stopped = true
	d.v.onError(e, why)
}

func (d *frameDecoder) ok(cont bool) bool {
	if !cont {
		d.stopped = true
	}
	return cont
}

// known reports whether t is a frame type the decoder understands (RFC 9113's ten).
func known(t http2.FrameType) bool { return t <= http2.FrameContinuation }

// checkHeader is Http2DecoderAdapter::OnFrameHeader and the size check that follows it
// (Http2FrameDecoder::StartDecodingPayload), run as soon as a frame's header has arrived.
// nghttp2 checks sizes first (nghttp2_session_mem_recv2, NGHTTP2_IB_READ_HEAD).
func (d *frameDecoder) checkHeader(h frameHeader) bool {
	if d.nghttp2 {
		return d.checkHeaderNghttp2(h)
	}
	if !d.ok(d.v.onCommonHeader(h)) {
		return false
	}
	if d.block && h.typ != http2.FrameContinuation {
		d.fail(framerUnexpectedFrame, "") // a header block must be finished by CONTINUATION
		return false
	}
	if !known(h.typ) {
		// The adapter's OnFrameHeader lets an unknown type through, and the decoder then checks
		// its length like any frame's (Http2FrameDecoder::StartDecodingPayload checks
		// payload_length against maximum_payload_size_ before it dispatches on the type), so an
		// oversized extension frame is SPDY_CONTROL_PAYLOAD_TOO_LARGE (OnFrameSizeError).
		if !d.ok(d.v.onUnknownFrame(h)) {
			return false
		}
		if h.length > d.maxFrame {
			d.fail(framerControlPayloadTooLarge, "")
			return false
		}
		return true
	}
	if !validStreamID(h) {
		d.stopped = true
		d.v.onBadStreamID(h)
		return false
	}
	if h.typ == http2.FrameContinuation && !d.block {
		d.fail(framerUnexpectedFrame, "")
		return false
	}
	if h.typ == http2.FrameData && h.flags&^(http2.FlagDataPadded|http2.FlagDataEndStream) != 0 {
		d.fail(framerInvalidDataFrameFlags, "")
		return false
	}
	if h.length > d.maxFrame {
		if h.typ == http2.FrameData {
			d.fail(framerOversizedPayload, "")
		} else {
			d.fail(framerControlPayloadTooLarge, "")
		}
		return false
	}
	return true
}

// checkHeaderNghttp2 is nghttp2's reading of a frame header: a header block must go on in
// CONTINUATION of its stream; then the length, against the frame size and each type's fixed
// size; then the stream id, whose violations nghttp2 mostly reports to Envoy's callback.
func (d *frameDecoder) checkHeaderNghttp2(h frameHeader) bool {
	if d.first {
		// NGHTTP2_IB_READ_FIRST_SETTINGS (nghttp2_session_mem_recv2): the first frame must be
		// a SETTINGS without ACK, checked before its length or anything else; otherwise the
		// session ends with GOAWAY PROTOCOL_ERROR "SETTINGS expected" (Envoy
		// multiplexed_integration_test.cc, BadFrame and DelayedCloseAfterBadFrame at nghttp2).
		d.first = false
		if h.typ != http2.FrameSettings || h.has(http2.FlagSettingsAck) {
			d.fail(framerUnexpectedFrame, "SETTINGS expected")
			return false
		}
	}
	if d.block && (h.typ != http2.FrameContinuation || h.stream != d.blockFirst.stream) {
		d.fail(framerUnexpectedFrame, "unexpected non-CONTINUATION frame or stream_id is invalid")
		return false
	}
	if !d.ok(d.v.onCommonHeader(h)) {
		return false
	}
	if h.length > d.maxFrame {
		// nghttp2_session_mem_recv2 (NGHTTP2_IB_READ_HEAD) checks the length against
		// max_frame_size before it switches on the type: an extension frame too.
		d.fail(framerControlPayloadTooLarge, "too large frame size")
		return false
	}
	if !known(h.typ) {
		return d.ok(d.v.onUnknownFrame(h))
	}
	if n, fixed := fixedLength(h); fixed && n != h.length || h.typ == http2.FrameGoAway && h.length < 8 ||
		h.typ == http2.FrameSettings && (h.length%6 != 0 || h.has(http2.FlagSettingsAck) && h.length != 0) {
		d.fail(framerInvalidControlFrameSize, "")
		return false
	}
	if h.typ == http2.FrameContinuation && !d.block {
		d.fail(framerUnexpectedFrame, "CONTINUATION: unexpected")
		return false
	}
	if !validStreamID(h) {
		d.stopped = true
		d.v.onBadStreamID(h)
		return false
	}
	return true
}

// fixedLength is the payload length of the frames whose length is fixed.
func fixedLength(h frameHeader) (uint32, bool) {
	switch h.typ {
	case http2.FramePriority:
		return 5, true
	case http2.FrameRSTStream, http2.FrameWindowUpdate:
		return 4, true
	case http2.FramePing:
		return 8, true
	}
	return 0, false
}

// validStreamID is IsValidHTTP2FrameStreamId: frames of a stream need one, connection frames
// must have none. WINDOW_UPDATE may have either.
func validStreamID(h frameHeader) bool {
	switch h.typ {
	case http2.FrameData, http2.FrameHeaders, http2.FramePriority, http2.FrameRSTStream,
		http2.FramePushPromise, http2.FrameContinuation:
		return h.stream != 0
	case http2.FrameSettings, http2.FramePing, http2.FrameGoAway:
		return h.stream == 0
	}
	return true
}

// frame decodes one whole frame whose header passed checkHeader.
func (d *frameDecoder) frame(h frameHeader, p []byte) {
	switch h.typ {
	case http2.FrameData:
		d.data(h, p)
	case http2.FrameHeaders:
		d.headers(h, p)
	case http2.FrameContinuation:
		if d.ok(d.v.onContinuation(h)) {
			d.fragment(h, p)
		}
	case http2.FramePriority:
		if len(p) != 5 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		d.ok(d.v.onPriority(h.stream, parsePriority(p)))
	case http2.FrameRSTStream:
		if len(p) != 4 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		d.ok(d.v.onRstStream(h.stream, http2.ErrCode(binary.BigEndian.Uint32(p))))
	case http2.FrameSettings:
		d.settings(h, p)
	case http2.FramePing:
		if len(p) != 8 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		var data [8]byte
		copy(data[:], p)
		d.ok(d.v.onPing(data, h.has(http2.FlagPingAck)))
	case http2.FrameGoAway:
		if len(p) < 8 {
			d.fail(framerInvalidControlFrame, "") // OnFrameSizeError names GOAWAY apart
			return
		}
		d.ok(d.v.onGoAway(binary.BigEndian.Uint32(p)&(1<<31-1), http2.ErrCode(binary.BigEndian.Uint32(p[4:])), p[8:]))
	case http2.FrameWindowUpdate:
		if len(p) != 4 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		d.ok(d.v.onWindowUpdate(h.stream, binary.BigEndian.Uint32(p)&(1<<31-1)))
	case http2.FramePushPromise:
		d.pushPromise(h, p)
	}
}
