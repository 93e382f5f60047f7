package conformance

import (
	"io"
	"net"
	"testing"
	"time"
)

// A held copy passes a burst of writes on as one write, and what is left when the source ends.
func TestCopyHeldJoinsABurst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	out, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	far := <-accepted
	defer far.Close()
	src, in := io.Pipe()
	done := make(chan struct{})
	go func() {
		copyHeld(out, src, 200*time.Millisecond)
		out.Close()
		close(done)
	}()
	for _, w := range []string{"HEADERS", "CONTINUATION"} {
		if _, err := in.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 64)
	n, err := far.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != "HEADERSCONTINUATION" {
		t.Errorf("the first read on the far side got %q, want both writes in one", got)
	}
	if _, err := in.Write([]byte("GOAWAY")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	<-done
	rest, _ := io.ReadAll(far)
	if string(rest) != "GOAWAY" {
		t.Errorf("after the source ended the far side read %q, want %q", rest, "GOAWAY")
	}
}
