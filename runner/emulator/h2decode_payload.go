package emulator

// The payload of each frame type as Envoy's codec takes it apart: padding, priority fields,
// header block fragments and SETTINGS entries (frameDecoder's per-type half; h2decode.go has
// the frame header checks and dispatch).

import (
	"encoding/binary"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func parsePriority(p []byte) priorityFields {
	v := binary.BigEndian.Uint32(p)
	return priorityFields{dependency: v & (1<<31 - 1), exclusive: v>>31 == 1, weight: p[4]}
}

// unpad strips a PADDED frame's pad length and padding (FrameDecoderState::ReadPadLength):
// padding that does not fit the payload is SPDY_INVALID_PADDING.
func (d *frameDecoder) unpad(h frameHeader, p []byte) (body []byte, pad int, ok bool) {
	if !h.has(http2.FlagDataPadded) { // the same bit (0x8) on DATA, HEADERS and PUSH_PROMISE
		return p, 0, true
	}
	why := "HEADERS: invalid padding"
	if h.typ == http2.FrameData {
		why = "DATA: invalid padding"
	}
	if len(p) == 0 {
		if h.typ == http2.FrameData {
			d.fail(framerInvalidDataFrameFlags, why) // OnPaddingTooLong, with no room for the pad length
		} else {
			d.fail(framerInvalidPadding, why)
		}
		return nil, 0, false
	}
	n := int(p[0])
	if n+1 > len(p) {
		if h.typ == http2.FrameData {
			d.v.onStreamPadding(h.stream, 1)
		}
		d.fail(framerInvalidPadding, why)
		return nil, 0, false
	}
	return p[1 : len(p)-n], n + 1, true
}

func (d *frameDecoder) data(h frameHeader, p []byte) {
	if !d.ok(d.v.onDataFrameHeader(h)) { // the decoder reports the frame before its padding
		return
	}
	body, pad, ok := d.unpad(h, p)
	if !ok {
		return
	}
	if pad > 0 && !d.ok(d.v.onStreamPadding(h.stream, pad)) {
		return
	}
	if len(body) > 0 && !d.ok(d.v.onStreamFrameData(h.stream, body)) {
		return
	}
	if !d.ok(d.v.onDataEnd(h, len(body))) {
		return
	}
	if h.has(http2.FlagDataEndStream) {
		d.ok(d.v.onStreamEnd(h.stream))
	}
}

// headers decodes a HEADERS frame. oghttp2 hears of it (OnHeaders) as soon as its header is
// in, before the pad length is read, unless it carries a priority, which comes after the pad
// length (Http2DecoderAdapter::OnHeadersStart, OnHeadersPriority); nghttp2 reads both first.
func (d *frameDecoder) headers(h frameHeader, p []byte) {
	early := !d.nghttp2 && !h.has(http2.FlagHeadersPriority)
	if early && !d.ok(d.v.onHeaders(h, nil)) {
		return
	}
	body, _, ok := d.unpad(h, p)
	if !ok {
		return
	}
	var prio *priorityFields
	if h.has(http2.FlagHeadersPriority) {
		if len(body) < 5 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		pf := parsePriority(body)
		prio, body = &pf, body[5:]
	}
	if !early && !d.ok(d.v.onHeaders(h, prio)) {
		return
	}
	d.block, d.blockFirst, d.blockStart = true, h, true
	d.fragment(h, body)
}

func (d *frameDecoder) pushPromise(h frameHeader, p []byte) {
	body, _, ok := d.unpad(h, p)
	if !ok {
		return
	}
	if len(body) < 4 {
		d.fail(framerInvalidControlFrameSize, "")
		return
	}
	promised := binary.BigEndian.Uint32(body) & (1<<31 - 1)
	if promised == 0 {
		d.fail(framerInvalidControlFrame, "")
		return
	}
	d.ok(d.v.onPushPromise(h.stream, promised))
}

// fragment decodes a header block fragment as it arrives; the block's first fragment starts
// it for the visitor (OnHeaderBlockStart, even when empty); at END_HEADERS the block is
// complete (CommonHpackFragmentEnd): the visitor hears its end, then END_STREAM of its first
// frame.
func (d *frameDecoder) fragment(h frameHeader, frag []byte) {
	stream := d.blockFirst.stream
	if d.blockStart {
		d.blockStart = false
		if !d.ok(d.v.onHeaderBlockStart(stream)) {
			return
		}
	}
	stop := false
	d.hdec.SetEmitFunc(func(f hpack.HeaderField) {
		if !stop && !d.v.onHeaderField(stream, f) {
			stop = true
		}
	})
	_, err := d.hdec.Write(frag)
	if stop {
		d.stopped = true
		return
	}
	if err != nil {
		d.fail(framerHpack, "")
		return
	}
	if !h.has(http2.FlagHeadersEndHeaders) { // the same bit (0x4) on CONTINUATION
		return
	}
	d.block = false
	if err := d.hdec.Close(); err != nil { // a truncated block
		d.fail(framerHpack, "")
		return
	}
	if stop || !d.ok(d.v.onHeaderFrameEnd(stream)) {
		d.stopped = true
		return
	}
	if d.blockFirst.has(http2.FlagHeadersEndStream) {
		d.ok(d.v.onStreamEnd(stream))
	}
}

// settings decodes SETTINGS (SettingsPayloadDecoder): an ACK with a payload, or a payload
// that is not whole settings, is a frame size error.
func (d *frameDecoder) settings(h frameHeader, p []byte) {
	if h.has(http2.FlagSettingsAck) {
		if len(p) != 0 {
			d.fail(framerInvalidControlFrameSize, "")
			return
		}
		d.ok(d.v.onSettingsAck())
		return
	}
	if len(p)%6 != 0 {
		d.fail(framerInvalidControlFrameSize, "")
		return
	}
	if !d.ok(d.v.onSettings()) {
		return
	}
	for ; len(p) > 0; p = p[6:] {
		s := http2.Setting{ID: http2.SettingID(binary.BigEndian.Uint16(p)), Val: binary.BigEndian.Uint32(p[2:])}
		if !d.ok(d.v.onSetting(s)) {
			return
		}
	}
	d.ok(d.v.onSettingsEnd())
}
