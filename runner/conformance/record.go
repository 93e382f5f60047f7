// Package conformance judges the local target's HTTP/2 on the wire with a client nobody here
// wrote: it runs h2spec (github.com/summerwind/h2spec) case by case against `igwlab serve`,
// through a proxy that records every frame the gateway sends, and compares each case's frames,
// h2spec's verdict and the gateway's counters with the table in docs/envoy-conformance.md,
// which gives Envoy 1.35's answer to each case with its source.
package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Who ends a recorded connection.
const (
	GatewayCloses = "gateway closes"
	ClientCloses  = "h2spec closes"
)

// Recorder is a TCP proxy in front of the gateway that records what the gateway sends on each
// connection, as frames written the way the conformance table writes them.
type Recorder struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []*recorded
	hold  time.Duration // see Hold
	wg    sync.WaitGroup
}

type recorded struct {
	mu     sync.Mutex
	frames []string
	last   time.Time // when the gateway last sent a frame
	end    string
	done   chan struct{}
}

// NewRecorder listens on a loopback port and forwards every connection to target.
func NewRecorder(target string) (*Recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Recorder{ln: ln, target: target}
	go r.accept()
	return r, nil
}

// Port is the port clients connect to.
func (r *Recorder) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// Hold makes the connections accepted from now on pass what the client writes in one burst
// (writes less than d apart) to the gateway as one write; zero forwards each read at once.
// A held connection takes the gaps between a client's writes out of what the gateway sees.
func (r *Recorder) Hold(d time.Duration) {
	r.mu.Lock()
	r.hold = d
	r.mu.Unlock()
}

// Close stops the proxy.
func (r *Recorder) Close() { r.ln.Close() }

func (r *Recorder) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		rec := &recorded{done: make(chan struct{})}
		r.mu.Lock()
		r.conns = append(r.conns, rec)
		hold := r.hold
		r.mu.Unlock()
		r.wg.Add(1)
		go r.proxy(c, rec, hold)
	}
}

// Take waits until every connection recorded so far has ended and returns the first one's
// frames and how it ended, forgetting them all.
func (r *Recorder) Take() ([]string, string) {
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	if len(conns) == 0 {
		return nil, ""
	}
	for _, c := range conns {
		<-c.done
	}
	// The case's own connection is the first: h2spec dials it before the case runs, and the
	// only other connection a case opens is ServerDataLength's probe (spec/util.go), which asks
	// how long the body of / is and stays open until h2spec exits.
	first := conns[0]
	return Answer(first.frames), first.end
}

// quiet is how long the gateway must have sent nothing before the client's close is passed on
// to it. h2spec closes as soon as a case passes; what the gateway still had on its way (a
// response's DATA after the HEADERS h2spec waited for) is then recorded, and the gateway sees
// the close after it, every time, instead of racing it.
const quiet = 250 * time.Millisecond

func (r *Recorder) proxy(c net.Conn, rec *recorded, hold time.Duration) {
	defer r.wg.Done()
	defer close(rec.done)
	g, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		rec.end = GatewayCloses
		return
	}
	var once sync.Once
	end := func(who string) {
		once.Do(func() {
			rec.mu.Lock()
			rec.end = who
			rec.mu.Unlock()
		})
	}
	gatewayDone := make(chan struct{})
	go func() { // client -> gateway
		if hold > 0 {
			copyHeld(g, c, hold)
		} else {
			_, _ = io.Copy(g, c)
		}
		end(ClientCloses)
		for {
			select {
			case <-gatewayDone:
			case <-time.After(quiet / 5):
				if time.Since(rec.lastFrame()) < quiet {
					continue
				}
			}
			break
		}
		g.Close()
	}()
	// gateway -> client, parsed on the way; a write the client no longer takes is dropped.
	pr, pw := io.Pipe()
	go func() {
		rec.read(pr)
		_, _ = io.Copy(io.Discard, pr)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := g.Read(buf)
		if n > 0 {
			_, _ = pw.Write(buf[:n])
			_, _ = c.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	end(GatewayCloses) // a no-op when the client closed first
	pw.Close()
	close(gatewayDone)
	c.Close()
}

// copyHeld copies src to dst until src ends, writing what src delivered in one burst (reads
// less than hold apart) with one write once src has been quiet for hold.
func copyHeld(dst io.Writer, src io.Reader, hold time.Duration) {
	reads := make(chan []byte)
	go func() {
		defer close(reads)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				reads <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var pending []byte
	broken := false // dst refused a write: the rest of src is read and dropped
	flush := func() {
		if len(pending) > 0 && !broken {
			_, err := dst.Write(pending)
			broken = err != nil
		}
		pending = pending[:0]
	}
	quiet := time.NewTimer(hold)
	quiet.Stop()
	for {
		select {
		case b, ok := <-reads:
			if !ok {
				flush()
				return
			}
			pending = append(pending, b...)
			quiet.Reset(hold)
		case <-quiet.C:
			flush()
		}
	}
}

func (rec *recorded) lastFrame() time.Time {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.last
}

// read parses the gateway's side of a connection into frames until it ends.
func (rec *recorded) read(r io.Reader) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(5); err == nil && string(head) == "HTTP/" {
		line, _ := br.ReadString('\n')
		f := strings.Fields(line)
		if len(f) >= 2 {
			rec.add(f[0] + " " + f[1])
		}
		_, _ = io.Copy(io.Discard, br)
		return
	}
	fr := http2.NewFramer(io.Discard, br)
	fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	fr.MaxHeaderListSize = 1 << 24
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				continue
			}
			_, _ = io.Copy(io.Discard, br)
			return
		}
		rec.add(frameText(f))
	}
}

func (rec *recorded) add(s string) {
	rec.mu.Lock()
	rec.frames = append(rec.frames, s)
	rec.last = time.Now()
	rec.mu.Unlock()
}

// frameText writes a frame as the table does.
func frameText(f http2.Frame) string {
	h := f.Header()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return "SETTINGS ack"
		}
		return "SETTINGS"
	case *http2.PingFrame:
		if f.IsAck() {
			return "PING ack"
		}
		return "PING"
	case *http2.WindowUpdateFrame:
		return fmt.Sprintf("WINDOW_UPDATE %d", h.StreamID)
	case *http2.MetaHeadersFrame:
		s := fmt.Sprintf("HEADERS %d %s", h.StreamID, f.PseudoValue("status"))
		if f.StreamEnded() {
			s += " end"
		}
		return s
	case *http2.DataFrame:
		if f.StreamEnded() {
			return fmt.Sprintf("DATA %d end", h.StreamID)
		}
		return fmt.Sprintf("DATA %d", h.StreamID)
	case *http2.RSTStreamFrame:
		return fmt.Sprintf("RST_STREAM %d %s", h.StreamID, f.ErrCode)
	case *http2.GoAwayFrame:
		s := fmt.Sprintf("GOAWAY %d %s", f.LastStreamID, f.ErrCode)
		if d := f.DebugData(); len(d) > 0 {
			s += fmt.Sprintf(" %q", d)
		}
		return s
	}
	return h.Type.String()
}

// Answer is what the gateway sent after the handshake (its SETTINGS, the connection
// WINDOW_UPDATE and the acknowledgement of the client's SETTINGS), with each run of DATA on one
// stream written once. Envoy sends the first two at the end of its first dispatch; over
// nghttp2 the acknowledgement overtakes the WINDOW_UPDATE when the client's SETTINGS was in that
// dispatch too (SETTINGS frames go to nghttp2's urgent queue), so either order is the handshake.
func Answer(frames []string) []string {
	if len(frames) > 0 && frames[0] == "SETTINGS" {
		frames = frames[1:]
		handshake := map[string]bool{"WINDOW_UPDATE 0": true, "SETTINGS ack": true}
		for len(frames) > 0 && handshake[frames[0]] {
			delete(handshake, frames[0])
			frames = frames[1:]
		}
	}
	var out []string
	for _, f := range frames {
		if n := len(out); n > 0 && strings.HasPrefix(f, "DATA ") {
			prev := out[n-1]
			if strings.TrimSuffix(prev, " end") == strings.TrimSuffix(f, " end") && !strings.HasSuffix(prev, " end") {
				out[n-1] = f
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// Join writes an answer and its end as the table does.
func Join(frames []string, end string) string {
	var b bytes.Buffer
	for _, f := range frames {
		b.WriteString(f)
		b.WriteString(", ")
	}
	b.WriteString(end)
	return b.String()
}
