package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Serve is a running `igwlab serve` process with one gateway pod.
type Serve struct {
	Target
	Cmd    *exec.Cmd
	Out    string // its results root
	done   chan error
	stderr *teeLines
}

// teeLines passes a process's stderr on and keeps the lines that say a pod was disrupted.
type teeLines struct {
	mu      sync.Mutex
	w       io.Writer
	partial []byte
	lines   []string
}

func (t *teeLines) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		if line := string(t.partial[:i]); strings.HasPrefix(line, "igwlab serve: ") {
			t.lines = append(t.lines, line)
		}
		t.partial = t.partial[i+1:]
	}
	return t.w.Write(p)
}

// Disruptions are the lines serve has written so far about pods killed or restarted.
func (s *Serve) Disruptions() []string {
	s.stderr.mu.Lock()
	defer s.stderr.mu.Unlock()
	return append([]string(nil), s.stderr.lines...)
}

var (
	vipLine   = regexp.MustCompile(`gateway VIP \([^)]*\): https?://(127\.0\.0\.1:[0-9]+)`)
	adminLine = regexp.MustCompile(`admin (http://[0-9.:]+)/stats/prometheus`)
)

// StartServe starts `bin serve --pods 1` with extra flags and waits until it prints its VIP and
// its pod's admin address.
func StartServe(ctx context.Context, bin, out string, flags ...string) (*Serve, error) {
	args := append([]string{"serve", "--pods", "1", "-q", "--out", out}, flags...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	tee := &teeLines{w: os.Stderr}
	cmd.Stderr = tee
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Serve{Cmd: cmd, Out: out, done: make(chan error, 1), stderr: tee}
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := vipLine.FindStringSubmatch(line); m != nil {
				s.VIP = m[1]
			}
			if m := adminLine.FindStringSubmatch(line); m != nil && s.Admin == "" {
				s.Admin = m[1]
			}
			if strings.HasPrefix(line, "press Ctrl-C") {
				found <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		found <- fmt.Errorf("igwlab serve ended before it printed its addresses")
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case err := <-found:
		if err == nil && (s.VIP == "" || s.Admin == "") {
			err = fmt.Errorf("igwlab serve printed no VIP or admin address")
		}
		if err != nil {
			_ = cmd.Process.Kill()
			return nil, err
		}
		return s, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("igwlab serve did not start within 30 s")
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return nil, ctx.Err()
	}
}

// Stop sends SIGINT and waits for serve to end; it returns how long that took.
func (s *Serve) Stop() (time.Duration, error) {
	start := time.Now()
	if err := s.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		return 0, err
	}
	select {
	case err := <-s.done:
		return time.Since(start), err
	case <-time.After(30 * time.Second):
		_ = s.Cmd.Process.Kill()
		return time.Since(start), fmt.Errorf("igwlab serve did not end within 30 s of SIGINT")
	}
}

// RSS is the process's resident memory in bytes (Linux), 0 where it cannot be read.
func RSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimPrefix(line, "VmRSS:"), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
