package h2dial

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
)

// ConnUse is one connection a client of long-lived streams opened, in seconds from the
// window's start, and the streams it carried: what tells a rotation that drained the
// connection from one that moved its streams (analysis reads the streams' seconds on
// connections past the gateway's rotation limit).
type ConnUse struct {
	Local   string  `json:"local"`
	OpenedS float64 `json:"opened_s"`
	Streams []Span  `json:"streams,omitempty"`
}

// Span is one stream's life on a connection. A stream still open when the window ended has
// Open set, and EndS the window's end.
type Span struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Open   bool    `json:"open_at_end,omitempty"`
}

// The long-stream mode (Options.LongStream): each worker holds one long-lived request at a
// time, an event stream or a long poll, reads it as it arrives and opens the next as soon as
// it ends, as an event-stream client reconnects. Each event of a text/event-stream body
// (go-httpbin's /sse, which stamps each event with the millisecond it was sent) is a message,
// and its delay is from that stamp; any other body counts each read as a message. The requests
// are the streams opened.

// stream holds one long-lived request until it ends or the run does.
func (w *worker) stream(ctx context.Context, req *http.Request) {
	if w.ends == nil {
		w.ends = map[string]int64{}
	}
	var conn *trackedConn
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { conn, _ = info.Conn.(*trackedConn) }}
	start := time.Now()
	resp, err := w.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		if ctx.Err() == nil {
			w.errors++
			w.errKinds[errorKind(err)]++
			time.Sleep(20 * time.Millisecond) // a gateway that is down is not asked thousands of times a second
		}
		return
	}
	w.opened++
	if resp.StatusCode >= 400 {
		w.errors++
		w.status[resp.StatusCode]++
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if !sse {
		w.hist.record(time.Since(start)) // its headers' delay: the body carries no stamps
	}
	err = readStream(resp.Body, sse, func(delay time.Duration) {
		w.requests++
		if sse {
			w.hist.record(delay)
		}
	})
	resp.Body.Close()
	over := ctx.Err() != nil
	if conn != nil {
		w.streams.span(conn, start, time.Now(), over)
	}
	switch {
	case over:
	case err != nil:
		w.ends[errorKind(err)]++
	default:
		w.ends["completed"]++
	}
}

// readStream reads a long-lived response until it ends: the events it carried, each event's
// delay from the time the server stamped it (ms, 0 when unstamped), and the error that ended
// it (nil: the server ended it).
func readStream(body io.Reader, sse bool, onEvent func(delay time.Duration)) error {
	if !sse {
		buf := make([]byte, 32<<10)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				onEvent(0)
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Timestamp int64 `json:"timestamp"`
		}
		var delay time.Duration
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Timestamp > 0 {
			delay = max(0, time.Since(time.UnixMilli(ev.Timestamp)))
		}
		onEvent(delay)
	}
	return sc.Err()
}

// span records a stream on its connection; open says the run ended it.
func (t *connTable) span(c *trackedConn, start, end time.Time, open bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.spans = append(c.spans, Span{StartS: start.Sub(t.start).Seconds(), EndS: end.Sub(t.start).Seconds(), Open: open})
}

// uses lists the connections that carried streams, in dial order, a stream's end at most the
// run's window.
func (t *connTable) uses(window time.Duration) []ConnUse {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []ConnUse
	for _, c := range t.conns {
		u := ConnUse{Local: c.LocalAddr().String(), OpenedS: c.opened.Seconds(), Streams: append([]Span(nil), c.spans...)}
		for i, sp := range u.Streams {
			if sp.Open || sp.EndS > window.Seconds() {
				u.Streams[i].EndS = window.Seconds()
			}
		}
		out = append(out, u)
	}
	return out
}
