package h2dial

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func tcpPair(t *testing.T) (client, server net.Conn) {
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
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestCombinedWritesKeepOrderAndBytes writes from many goroutines, serialised as the transport
// serialises its frames, and checks the peer reads every message whole and in write order.
func TestCombinedWritesKeepOrderAndBytes(t *testing.T) {
	client, server := tcpPair(t)
	inner := &countingConn{Conn: client}
	tc := newTrackedConn(inner, &connTable{start: time.Now()})
	defer tc.Close()

	const writers, each = 32, 200
	var serial sync.Mutex // the transport's write lock
	var want bytes.Buffer
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				msg := fmt.Sprintf("[%02d:%04d]", w, i)
				serial.Lock()
				want.WriteString(msg)
				_, err := tc.Write([]byte(msg))
				serial.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := make([]byte, writers*each*len("[00:0000]"))
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(server, got)
		done <- err
	}()
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the peer read the messages out of order or torn")
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	t.Logf("%d messages in %d system calls", writers*each, inner.writes)
	if inner.writes > writers*each {
		t.Errorf("%d socket writes for %d messages", inner.writes, writers*each)
	}
}

// TestCombinedWritesBackPressureAndErrors checks a peer that stops reading eventually blocks the
// writer (the pending buffer is bounded) and that a failed socket fails later writes.
func TestCombinedWritesBackPressureAndErrors(t *testing.T) {
	a, b := net.Pipe() // synchronous: nothing is written until b reads
	tc := newTrackedConn(a, &connTable{start: time.Now()})
	chunk := make([]byte, 64<<10)
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for i := 0; i < 100; i++ {
			if _, err := tc.Write(chunk); err != nil {
				break
			}
			n++
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("%d writes of 64 KiB returned against a peer that reads nothing", n)
	case <-time.After(200 * time.Millisecond):
	}
	b.Close() // the socket fails: the blocked write and every later one must report it
	select {
	case n := <-wrote:
		if n > 2*maxPending/len(chunk)+1 { // one batch in the socket, one pending
			t.Errorf("%d writes buffered, more than twice the %d KiB bound", n, maxPending>>10)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write stayed blocked after the socket failed")
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, err := tc.Write([]byte("x")); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes keep succeeding on a failed socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tc.Close()
}
