package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// stopUnderLoad starts cmd, and once a line of its output contains trigger and delay has
// passed (the load is running then), sends sig; onTrigger, if set, gets the output up to the
// trigger. It returns the exit code, how long the command took to end after the signal, and its
// output.
func stopUnderLoad(t *testing.T, cmd *exec.Cmd, trigger string, delay time.Duration, sig os.Signal, onTrigger func(output string)) (int, time.Duration, string) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var all strings.Builder
	var sent time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc, fired := bufio.NewScanner(pr), false
		for sc.Scan() {
			mu.Lock()
			all.WriteString(sc.Text() + "\n")
			sofar := all.String()
			mu.Unlock()
			if !fired && strings.Contains(sc.Text(), trigger) {
				fired = true
				if onTrigger != nil {
					onTrigger(sofar)
				}
				go func() {
					time.Sleep(delay)
					mu.Lock()
					sent = time.Now()
					mu.Unlock()
					_ = cmd.Process.Signal(sig)
				}()
			}
		}
	}()
	err := cmd.Wait()
	ended := time.Now()
	pw.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if sent.IsZero() {
		t.Fatalf("%v ended (%v) before it was stopped:\n%s", cmd.Args, err, all.String())
	}
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, ended.Sub(sent), all.String()
}

// hammer keeps 256 streams in flight on one HTTP/2 connection to url until ctx ends: a client
// of the user's own, as serve invites.
func hammer(ctx context.Context, url string) {
	tr := &http2.Transport{AllowHTTP: true, StrictMaxConcurrentStreams: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range 256 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

var vipURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)

// TestStopsWithinTwoSecondsUnderLoad: serve, suite, sweep and capacity each end within 2 s of
// SIGINT or SIGTERM while load runs, and keep what they measured.
func TestStopsWithinTwoSecondsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four commands under load (about 30 s)")
	}
	bin := buildIgwlab(t)
	for _, tc := range []struct {
		name    string
		args    []string
		trigger string
		sig     syscall.Signal
		kept    string // a file the interrupted run leaves in its results folder
	}{
		{"serve", []string{"serve", "--pods", "2", "-q"}, "press Ctrl-C", syscall.SIGINT, "summary.json"},
		{"suite", []string{"suite", "--only", "02-trigger", "--duration", "20s", "--pods", "3"}, "load:", syscall.SIGINT, "summary.json"},
		{"sweep", []string{"sweep", "--scenario", "02-trigger", "--knob", "hcm.common_http_protocol_options.max_requests_per_connection",
			"--values", "100,1000", "--duration", "20s", "--pods", "3"}, "load:", syscall.SIGTERM, "sweep.json"},
		{"capacity", []string{"capacity", "--scenario", "02-trigger", "--slo", "p99=100ms", "--pods", "3"}, "load:", syscall.SIGINT, "capacity.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var load sync.WaitGroup
			defer load.Wait()
			defer cancel()
			cmd := exec.Command(bin, append(tc.args, "--out", out)...)
			code, took, output := stopUnderLoad(t, cmd, tc.trigger, 1500*time.Millisecond, tc.sig, func(sofar string) {
				if vip := vipURL.FindString(sofar); tc.name == "serve" && vip != "" {
					load.Go(func() { hammer(ctx, vip+"/get") }) // serve's load is the user's client
				}
			})
			if took > 2*time.Second {
				t.Errorf("%s took %s to end after %s, want at most 2 s", tc.name, took.Round(time.Millisecond), tc.sig)
			}
			if tc.name != "serve" && code != 130 {
				t.Errorf("exit code %d after %s, want 130\n%s", code, tc.sig, output)
			}
			if tc.name == "serve" && code != 0 {
				t.Errorf("serve exit code %d after SIGINT, want 0 (Ctrl-C is how it ends)\n%s", code, output)
			}
			kept, _ := filepath.Glob(filepath.Join(out, "*", tc.kept))
			if len(kept) != 1 {
				t.Errorf("no %s kept under %s after the signal:\n%s", tc.kept, out, output)
			}
			t.Logf("%s ended %s after %s", tc.name, took.Round(time.Millisecond), tc.sig)
		})
	}
}
