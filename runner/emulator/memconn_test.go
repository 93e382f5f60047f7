package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The in-process hop must behave as the socket it stands for wherever net/http relies on it:
// bytes in order, EOF after the peer's close, a write to a closed peer failing, deadlines
// timing out (the server's background read is stopped by one) and a closed listener
// refusing a dial as a socket does.
func TestMemConnBehavesAsASocket(t *testing.T) {
	ln := newMemListener(&net.TCPAddr{IP: net.IPv4(127, 0, 2, 1), Port: 8080})
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := ln.dial(context.Background(), &net.TCPAddr{IP: net.IPv4(127, 0, 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s.RemoteAddr().String() != "127.0.1.1:0" || c.RemoteAddr().String() != "127.0.2.1:8080" {
		t.Errorf("addresses: server sees %s, client %s", s.RemoteAddr(), c.RemoteAddr())
	}

	// A write larger than a read's buffer arrives whole and in order, without a reader
	// waiting: it sits in the buffer as in a socket's.
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	got := make([]byte, 0, len(big))
	buf := make([]byte, 16<<10)
	for len(got) < len(big) {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != string(big) {
		t.Error("bytes changed on the way")
	}

	// A read deadline in the past wakes a blocked read with a timeout, as net/http's server
	// uses one to end its background read; a cleared deadline reads again.
	done := make(chan error, 1)
	go func() { _, err := s.Read(buf); done <- err }()
	time.Sleep(10 * time.Millisecond)
	s.SetReadDeadline(time.Now().Add(-time.Second))
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v", err)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("not a timeout: %v", err)
	}
	s.SetReadDeadline(time.Time{})
	c.Write([]byte("x"))
	if n, err := s.Read(buf); n != 1 || err != nil {
		t.Errorf("read after clearing the deadline: %d, %v", n, err)
	}
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read until a future deadline: %v", err)
	}

	// Close: the peer reads what was sent, then EOF; its writes fail as on a closed socket.
	c.Write([]byte("last"))
	c.Close()
	s.SetReadDeadline(time.Time{})
	if n, err := s.Read(buf); string(buf[:n]) != "last" || err != nil {
		t.Errorf("read after the peer closed: %q, %v", buf[:n], err)
	}
	if _, err := s.Read(buf); err != io.EOF {
		t.Errorf("then: %v, want EOF", err)
	}
	if _, err := s.Write([]byte("y")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write to a closed peer: %v", err)
	}
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on a closed end: %v", err)
	}

	ln.Close()
	_, err = ln.dial(context.Background(), nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after close: %v, want connection refused", err)
	}
}
