package conformance

import (
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// writes records each Write it is given.
type writes struct {
	mu  sync.Mutex
	got []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, string(p))
	return len(p), nil
}

// A held copy passes a burst of writes on as one write, and what is left when the source ends.
func TestCopyHeldJoinsABurst(t *testing.T) {
	src, in := io.Pipe()
	dst := &writes{}
	done := make(chan struct{})
	go func() {
		copyHeld(dst, src, 200*time.Millisecond)
		close(done)
	}()
	for _, w := range []string{"HEADERS", "CONTINUATION"} {
		if _, err := in.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond) // the burst's hold runs out
	if _, err := in.Write([]byte("GOAWAY")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	<-done
	if want := []string{"HEADERSCONTINUATION", "GOAWAY"}; !slices.Equal(dst.got, want) {
		t.Errorf("the gateway side was written %q, want %q: the burst in one write, then what was left at the end", dst.got, want)
	}
}
