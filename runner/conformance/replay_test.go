package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// The replay tier: black-box cases of Envoy's own integration tests, translated to what a
// downstream client does and sees, run against `igwlab serve` as a user would run it (one pod,
// one worker, the knobs the test sets given as an EnvoyFilter). Each case cites its Envoy test;
// envoytests_test.go holds them.

// envoyCase is one of Envoy's integration tests, as a downstream client replays it.
type envoyCase struct {
	// Envoy's test/integration/<File>, TEST_P(Fixture, Test)
	File, Fixture, Test string
	Knobs               []string // the knobs the test's config sets, as path=value
	Codec               string   // the codec the test runs with where it matters ("": the default, oghttp2)
	Run                 func(r *replay)
}

// replay is one case's run: the serve process for its config and the client's helpers.
type replay struct {
	t      *testing.T
	s      *Serve
	before map[string]int64
}

// startFor starts a serve process of the case's own for its config and stops it when the case
// ends. The counters a case checks are what changed while it ran, so a serve of its own lets
// the cases run side by side: most of them wait on the gateway's timers (idle and stream
// timeouts, drains), not on the CPU.
func startFor(t *testing.T, bin string, c envoyCase) *Serve {
	t.Helper()
	flags := []string{"--seed", "1"}
	if c.Codec != "" {
		flags = append(flags, "--http2-codec", c.Codec)
	}
	if len(c.Knobs) > 0 {
		var k stacks.Knobs
		for _, kv := range c.Knobs {
			path, v, _ := strings.Cut(kv, "=")
			spec, ok := stacks.Lookup(path)
			if !ok {
				t.Fatalf("no knob %s", path)
			}
			if err := spec.Set(&k, v); err != nil {
				t.Fatal(err)
			}
		}
		b, err := envoyfilter.YAML(envoyfilter.Object("replay", stacks.Scenario{Knobs: k}, envoyfilter.DefaultTarget))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "envoyfilter.yaml")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--envoyfilter", f)
	}
	s, err := StartServe(context.Background(), bin, t.TempDir(), flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := s.Stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

// counted checks what the gateway counted while the case ran: each stat (its name as /stats
// prints it, with the connection manager's prefix left out: "downstream_cx_protocol_error")
// rose by exactly n.
func (r *replay) counted(want map[string]int64) {
	r.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		after, err := Counters(context.Background(), r.s.Admin)
		if err != nil {
			r.t.Fatal(err)
		}
		d := map[string]int64{}
		for k, v := range after {
			d[k] = v - r.before[k]
		}
		var bad []string
		for name, n := range want {
			if got := statDelta(d, name); got != n {
				bad = append(bad, fmt.Sprintf("%s +%d, want +%d", name, got, n))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) { // a close is counted a moment after the client sees it
			sort.Strings(bad)
			r.t.Errorf("counters: %s", strings.Join(bad, "; "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statDelta is the change of stat name: the connection manager's (Counters strips its prefix),
// or else the sum of those whose name ends in it (the listener's address varies with the pool).
func statDelta(d map[string]int64, name string) int64 {
	if v, ok := d[name]; ok {
		return v
	}
	var n int64
	for k, v := range d {
		if k == name || strings.HasSuffix(k, "."+name) {
			n += v
		}
	}
	return n
}

// wire is a raw HTTP/2 client connection: the frames a test writes, the frames it reads.
type wire struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	dec  *hpack.Decoder
}

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// dial opens a connection to the gateway; with settings, it sends the client preface and an
// empty SETTINGS frame, as every HTTP/2 client does first.
func (r *replay) dial(settings bool, s ...http2.Setting) *wire {
	r.t.Helper()
	c, err := net.DialTimeout("tcp", r.s.VIP, 2*time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	w := &wire{t: r.t, c: c, fr: http2.NewFramer(c, c), dec: hpack.NewDecoder(4096, nil)}
	w.fr.ReadMetaHeaders = nil
	w.enc = hpack.NewEncoder(&w.hbuf)
	if settings {
		if _, err := io.WriteString(c, clientPreface); err != nil {
			r.t.Fatal(err)
		}
		if err := w.fr.WriteSettings(s...); err != nil {
			r.t.Fatal(err)
		}
	}
	return w
}

// block encodes header fields given as name, value pairs.
func (w *wire) block(fields ...string) []byte {
	w.hbuf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = w.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return append([]byte(nil), w.hbuf.Bytes()...)
}

// get is a request's usual header fields for path, then extra pairs.
func get(method, path string, extra ...string) []string {
	return append([]string{":method", method, ":scheme", "http", ":path", path, ":authority", "lab.local"}, extra...)
}

// headers sends one HEADERS frame (END_HEADERS) with the fields.
func (w *wire) headers(id uint32, end bool, fields ...string) {
	w.t.Helper()
	if err := w.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: w.block(fields...), EndStream: end, EndHeaders: true}); err != nil {
		w.t.Fatal(err)
	}
}

// data sends a DATA frame.
func (w *wire) data(id uint32, end bool, p []byte) {
	w.t.Helper()
	if err := w.fr.WriteData(id, end, p); err != nil {
		w.t.Fatal(err)
	}
}

// frame is what the client read: one frame, or the connection's end (typ 0xff).
type frame struct {
	typ       http2.FrameType
	stream    uint32
	code      http2.ErrCode // RST_STREAM's, GOAWAY's
	status    string        // a response HEADERS frame's :status
	end       bool          // END_STREAM
	debug     string        // GOAWAY's debug data
	lastID    uint32        // GOAWAY's last stream id
	bodyBytes int
	fields    []string // a HEADERS frame's fields, name: value
}

const closed http2.FrameType = 0xff

func (f frame) String() string {
	switch {
	case f.typ == closed:
		return "close"
	case f.typ == http2.FrameGoAway:
		return fmt.Sprintf("GOAWAY(last %d, %v, %q)", f.lastID, f.code, f.debug)
	case f.typ == http2.FrameRSTStream:
		return fmt.Sprintf("RST_STREAM(%d, %v)", f.stream, f.code)
	case f.typ == http2.FrameHeaders:
		return fmt.Sprintf("HEADERS(%d, %s, end %v)", f.stream, f.status, f.end)
	case f.typ == http2.FrameData:
		return fmt.Sprintf("DATA(%d, %d bytes, end %v)", f.stream, f.bodyBytes, f.end)
	}
	return fmt.Sprintf("%v(%d)", f.typ, f.stream)
}

// read reads frames for up to d, acknowledging SETTINGS and answering nothing else, until
// until says stop (nil: until the connection ends or d passes). It returns what it read, the
// connection's end as a frame of type closed.
func (w *wire) read(d time.Duration, until func(frame) bool) []frame {
	w.t.Helper()
	var out []frame
	_ = w.c.SetReadDeadline(time.Now().Add(d))
	defer w.c.SetReadDeadline(time.Time{})
	for {
		f, err := w.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return out
			}
			return append(out, frame{typ: closed})
		}
		g := frame{typ: f.Header().Type, stream: f.Header().StreamID}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = w.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			g.end = f.StreamEnded()
			fields, _ := w.dec.DecodeFull(f.HeaderBlockFragment())
			for _, hf := range fields {
				if hf.Name == ":status" {
					g.status = hf.Value
				}
				g.fields = append(g.fields, hf.Name+": "+hf.Value)
			}
		case *http2.DataFrame:
			g.end, g.bodyBytes = f.StreamEnded(), len(f.Data())
		case *http2.RSTStreamFrame:
			g.code = f.ErrCode
		case *http2.GoAwayFrame:
			g.code, g.debug, g.lastID = f.ErrCode, string(f.DebugData()), f.LastStreamID
		}
		out = append(out, g)
		if until != nil && until(g) {
			return out
		}
	}
}

// has reports whether the frames hold one that matches.
func has(fs []frame, match func(frame) bool) bool {
	for _, f := range fs {
		if match(f) {
			return true
		}
	}
	return false
}

func isGoAway(code http2.ErrCode) func(frame) bool {
	return func(f frame) bool { return f.typ == http2.FrameGoAway && f.code == code }
}

func isReset(id uint32, code http2.ErrCode) func(frame) bool {
	return func(f frame) bool { return f.typ == http2.FrameRSTStream && f.stream == id && f.code == code }
}

func isStatus(id uint32, status string) func(frame) bool {
	return func(f frame) bool { return f.typ == http2.FrameHeaders && f.stream == id && f.status == status }
}

func isClose(f frame) bool { return f.typ == closed }

// expect fails the case unless every matcher matches a frame read.
func (r *replay) expect(fs []frame, what string, ok bool) {
	r.t.Helper()
	if !ok {
		r.t.Errorf("want %s; read %v", what, fs)
	}
}

// TestEnvoyIntegrationReplay runs every case against serve.
func TestEnvoyIntegrationReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts igwlab serve")
	}
	bin := buildIgwlab(t)
	tests := map[string]bool{}
	for _, c := range envoyCases {
		if strings.HasSuffix(c.File, "_integration_test.cc") {
			tests[c.File+" "+c.Fixture+"."+c.Test] = true
		}
	}
	if len(tests) < 30 {
		t.Errorf("%d of Envoy's integration tests; the tier replays at least 30", len(tests))
	}
	seen := map[string]bool{}
	for _, c := range envoyCases {
		name := c.Fixture + "/" + c.Test
		if c.Codec != "" {
			name += "/" + c.Codec
		}
		if seen[name] {
			t.Errorf("case %s twice", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startFor(t, bin, c)
			before, err := Counters(context.Background(), s.Admin)
			if err != nil {
				t.Fatal(err)
			}
			c.Run(&replay{t: t, s: s, before: before})
		})
	}
}
