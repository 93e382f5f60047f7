package emulator

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/stacks"
)

// rawClient speaks HTTP/2 frame by frame (x/net's Framer and hpack), so tests can see exactly
// what the emulated gateway sends: SETTINGS, WINDOW_UPDATE, RST_STREAM codes, both GOAWAYs.
type rawClient struct {
	t        *testing.T
	c        net.Conn
	fr       *http2.Framer
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	settings map[http2.SettingID]uint32
	connWU   uint32 // the connection WINDOW_UPDATE sent with the server preface
}

// frameInfo is a copy of what a test needs from a frame (frames are reused by the Framer).
type frameInfo struct {
	typ        http2.FrameType
	stream     uint32
	code       http2.ErrCode
	lastStream uint32
	end        bool
	increment  uint32
	status     string
	dataLen    int
	at         time.Time
}

func dialRaw(t *testing.T, addr string, ack bool) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{t: t, c: c, settings: map[http2.SettingID]uint32{}}
	rc.fr = http2.NewFramer(c, c)
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rc.enc = hpack.NewEncoder(&rc.hbuf)
	if _, err := io.WriteString(c, clientPreface); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server preface: SETTINGS, then possibly a connection WINDOW_UPDATE.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	f, err := rc.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	_ = sf.ForeachSetting(func(s http2.Setting) error { rc.settings[s.ID] = s.Val; return nil })
	if ack {
		if err := rc.fr.WriteSettingsAck(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { c.Close() })
	return rc
}

func (rc *rawClient) headers(id uint32, method, path string, end bool, extra ...hpack.HeaderField) {
	rc.t.Helper()
	rc.hbuf.Reset()
	for _, f := range append([]hpack.HeaderField{{Name: ":method", Value: method}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "lab.local"}, {Name: ":path", Value: path}}, extra...) {
		_ = rc.enc.WriteField(f)
	}
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.hbuf.Bytes(), EndStream: end, EndHeaders: true}); err != nil {
		rc.t.Fatal(err)
	}
}

// read collects frames until pred returns true, the connection ends or timeout passes.
func (rc *rawClient) read(timeout time.Duration, pred func(frameInfo) bool) ([]frameInfo, error) {
	var out []frameInfo
	deadline := time.Now().Add(timeout)
	for {
		_ = rc.c.SetReadDeadline(deadline)
		f, err := rc.fr.ReadFrame()
		if err != nil {
			return out, err
		}
		fi := frameInfo{typ: f.Header().Type, stream: f.Header().StreamID, at: time.Now()}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			fi.code, fi.lastStream = f.ErrCode, f.LastStreamID
		case *http2.RSTStreamFrame:
			fi.code = f.ErrCode
		case *http2.MetaHeadersFrame:
			fi.status, fi.end = f.PseudoValue("status"), f.StreamEnded()
		case *http2.DataFrame:
			fi.end, fi.dataLen = f.StreamEnded(), len(f.Data())
			if n := len(f.Data()); n > 0 {
				_ = rc.fr.WriteWindowUpdate(0, uint32(n))
				_ = rc.fr.WriteWindowUpdate(f.StreamID, uint32(n))
			}
		case *http2.WindowUpdateFrame:
			fi.increment = f.Increment
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = rc.fr.WriteSettingsAck()
			}
		}
		out = append(out, fi)
		if pred != nil && pred(fi) {
			return out, nil
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// testPool starts a small, fast pool and applies knobs.
func testPool(t *testing.T, cfg Config, k stacks.Knobs) *Pool {
	t.Helper()
	if cfg.Pods == 0 {
		cfg.Pods = 1
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Model == (Model{}) {
		cfg.Model = Model{ServiceTime: 50 * time.Microsecond, PerKiB: time.Microsecond}
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Apply(Setup{Knobs: k})
	return p
}

// knobs builds a Knobs from "path=value" pairs, checked against the registry.
func knobs(t *testing.T, kv ...string) stacks.Knobs {
	t.Helper()
	var k stacks.Knobs
	for i := 0; i+1 < len(kv); i += 2 {
		spec, ok := stacks.Lookup(kv[i])
		if !ok {
			t.Fatalf("no knob %s", kv[i])
		}
		if err := spec.Set(&k, kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// statValue reads a pod stat by its full admin name.
func statValue(t *testing.T, p *Pod, name string) int64 {
	t.Helper()
	for _, s := range p.store.All() {
		if s.Name == name {
			return s.Value()
		}
	}
	t.Fatalf("pod %s has no stat %s", p.Name, name)
	return 0
}

func hcmName(p *Pod, stat string) string { return "http." + p.hcmPrefix + ";." + stat }

// waitStat waits up to two seconds for a stat to reach want (a connection's end is counted
// when the gateway has torn it down, a moment after the client sees it) and returns its value.
func waitStat(t *testing.T, p *Pod, name string, want int64) int64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := statValue(t, p, name)
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}
