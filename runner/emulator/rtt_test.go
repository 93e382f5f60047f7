package emulator

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/stacks"
)

// TestClientRTTDelaysEachWay: a PING through the gateway VIP comes back one round trip later.
func TestClientRTTDelaysEachWay(t *testing.T) {
	p := testPool(t, Config{ClientRTT: 40 * time.Millisecond}, knobs(t))
	rc := dialRaw(t, p.VIP(), true)
	for i := 0; i < 3; i++ {
		sent := time.Now()
		_ = rc.fr.WritePing(false, [8]byte{byte(i)})
		if _, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FramePing }); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(sent); d < 38*time.Millisecond || d > 120*time.Millisecond {
			t.Errorf("PING round trip %s with a 40ms RTT", d)
		}
	}
}

// timedBody is a request body that notes when the client's transport took its first and its
// last byte: the transport reads the body only as the server's windows let it send.
type timedBody struct {
	r           io.Reader
	first, last time.Time
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.first.IsZero() {
		b.first = time.Now()
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.last = time.Now()
	}
	return n, err
}

// upload POSTs n bytes through the VIP with Go's HTTP/2 client (to /post, which reads the whole
// body) and returns how long sending the body took, from its first byte to its last.
func upload(t *testing.T, vip string, n int) time.Duration {
	t.Helper()
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	// One request first, so the connection and its SETTINGS are in place before the clock runs.
	if resp, err := c.Get("http://" + vip + "/get"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	} else {
		t.Fatal(err)
	}
	body := &timedBody{r: bytes.NewReader(make([]byte, n))}
	resp, err := c.Post("http://"+vip+"/post", "application/octet-stream", body)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || body.last.IsZero() {
		t.Fatalf("upload: HTTP %d, body sent to the end: %v", resp.StatusCode, !body.last.IsZero())
	}
	return body.last.Sub(body.first)
}

// TestStreamWindowBoundsUploadsAtRTT: across a 20 ms round trip a stream moves at most one of
// the gateway's receive windows per round trip, so an upload through a 64 KiB window runs at
// about window/RTT; a 16 MiB window does not bind it. At loopback's RTT neither binds.
func TestStreamWindowBoundsUploadsAtRTT(t *testing.T) {
	if testing.Short() {
		t.Skip("times uploads across an emulated round trip")
	}
	const rtt, body, window = 20 * time.Millisecond, 4 << 20, 65535
	small := func(rtt time.Duration) *Pool {
		return testPool(t, Config{ClientRTT: rtt}, knobs(t, "hcm.http2_protocol_options.initial_stream_window_size", "65535"))
	}
	// The first window goes out at once; every further one waits a round trip for its
	// WINDOW_UPDATE. oghttp2's window updates (a third of the window owed, or the client down
	// to half) keep a Go client sending all the time: it moves one window per round trip.
	want := float64(window) / rtt.Seconds()
	// A starved CPU (other builds on a shared machine) can only slow an upload down, never
	// speed it past the window: faster than window/RTT fails at once, slower is measured again
	// before it fails.
	retry(t, 3, func() error {
		took := upload(t, small(rtt).VIP(), body)
		got := float64(body-window) / took.Seconds()
		if got > 1.25*want {
			t.Fatalf("through a %d-byte window at %s: %.2f MB/s, faster than window/RTT = %.2f MB/s allows", window, rtt, got/1e6, want/1e6)
		}
		if got < 0.75*want {
			return fmt.Errorf("through a %d-byte window at %s: %.2f MB/s, want within 25%% of window/RTT = %.2f MB/s", window, rtt, got/1e6, want/1e6)
		}
		return nil
	})
	big := testPool(t, Config{ClientRTT: rtt}, stacks.Knobs{})
	retry(t, 3, func() error {
		if d := upload(t, big.VIP(), body); d > 3*rtt {
			return fmt.Errorf("through a 256 MiB window at %s the upload took %s: the window should not bind", rtt, d)
		}
		return nil
	})
	loop := small(0)
	retry(t, 3, func() error {
		if d := upload(t, loop.VIP(), body); d > 4*rtt {
			return fmt.Errorf("through a 64 KiB window at loopback's RTT the upload took %s", d)
		}
		return nil
	})
}

// retry runs a timing check up to n times and fails the test with the last error only when
// every attempt missed: a busy machine can make one measurement slow, a wrong model misses
// every time.
func retry(t *testing.T, n int, check func() error) {
	t.Helper()
	var err error
	for i := 0; i < n; i++ {
		if err = check(); err == nil {
			return
		}
		t.Logf("attempt %d: %v", i+1, err)
	}
	t.Error(err)
}
