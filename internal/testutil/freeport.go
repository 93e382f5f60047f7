package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreePort is a loopback port nothing listens on, kept for this test until it ends.
//
// A port the kernel handed out for 127.0.0.1:0 and that was closed again is free only for
// a moment: every other test process binding :0 or dialling out draws from the same
// ephemeral range, and one of them took such a port between the pick and the k3d script's
// "is it in use" probe. So the port comes from below the ephemeral range, where only an
// explicit bind lands; it is reserved against this process's other tests (a set) and other
// test processes (an exclusive lock file held until the test's cleanup).
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := unassignedRange()
	if hi-lo < 1000 {
		return kernelPort(t) // the ephemeral range reaches down to the well-known ports
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		release, ok := reserve(port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			release()
			continue
		}
		l.Close()
		t.Cleanup(release)
		return port
	}
	t.Fatalf("no free loopback port in [%d, %d) after 200 tries", lo, hi)
	return 0
}

func kernelPort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// unassignedRange is the ports from 20000 up to where the kernel's ephemeral range starts
// (Linux's ip_local_port_range; 32768 where it cannot be read, Linux's default and below
// the BSDs' and macOS's 49152).
func unassignedRange() (lo, hi int) {
	lo, hi = 20000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			hi = n
		}
	}
	return lo, hi
}

var (
	takenMu sync.Mutex
	taken   = map[int]bool{}
)

// reserve claims port for this process until release: in-process through taken, across
// test processes through an exclusive lock on a file named after the port (released by
// the kernel if the process dies, so nothing stale is left to honour).
func reserve(port int) (release func(), ok bool) {
	takenMu.Lock()
	defer takenMu.Unlock()
	if taken[port] {
		return nil, false
	}
	var f *os.File
	if dir, err := portLockDir(); err == nil {
		// Where no lock file can be made (a read-only temporary folder) the in-process set
		// guards alone: better than no port at all.
		f, _ = os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o600)
	}
	if f != nil && !lockFile(f) {
		f.Close()
		return nil, false
	}
	taken[port] = true
	return func() {
		takenMu.Lock()
		defer takenMu.Unlock()
		delete(taken, port)
		if f != nil {
			f.Close() // closing the descriptor drops the lock
		}
	}, true
}

// portLockDir is the folder of the ports' lock files, one per user of the machine.
func portLockDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("igwlab-test-ports-%d", os.Getuid()))
	return dir, os.MkdirAll(dir, 0o700)
}
