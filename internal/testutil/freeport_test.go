package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestFreePortStaysOutOfTheKernelsRangeAndIsHeld(t *testing.T) {
	lo, hi := unassignedRange()
	if hi-lo < 1000 {
		t.Skipf("the ephemeral range starts at %d: FreePort falls back to a kernel-assigned port", hi)
	}
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if p < lo || p >= hi {
			t.Fatalf("FreePort = %d, want it in [%d, %d), below the ephemeral range", p, lo, hi)
		}
		if seen[p] {
			t.Fatalf("FreePort handed out %d twice in one test", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("FreePort's %d cannot be listened on: %v", p, err)
		}
		l.Close()
	}
}

func TestFreePortSkipsAPortAnotherProcessHolds(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no cross-process lock off unix")
	}
	const port = 20001
	dir, err := portLockDir()
	if err != nil {
		t.Fatal(err)
	}
	// A second open file description stands for another test process: flock conflicts
	// between descriptions, not only between processes.
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !lockFile(f) {
		t.Skipf("port %d is held by a running test process", port)
	}
	if release, ok := reserve(port); ok {
		release()
		t.Fatalf("reserve(%d) succeeded while another holder had its lock", port)
	}
	f.Close()
	release, ok := reserve(port)
	if !ok {
		t.Fatalf("reserve(%d) failed once the other holder let go", port)
	}
	release()
}
