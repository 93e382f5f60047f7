package local

import (
	"bufio"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/emulator"
)

// ownListeners lists the listening TCP sockets of this process, from the kernel's tables
// (/proc/self/net/tcp{,6}) matched against this process's socket descriptors, so nothing the
// local target opens can escape the check, whoever opened it.
func ownListeners(t *testing.T) []net.IP {
	t.Helper()
	mine := map[string]bool{}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ips []net.IP
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !mine[fields[9]] { // 0A: LISTEN
				continue
			}
			raw, _ := hex.DecodeString(strings.Split(fields[1], ":")[0])
			// The kernel prints the address as 32-bit words in host order (little-endian here).
			for i := 0; i+4 <= len(raw); i += 4 {
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			ips = append(ips, net.IP(raw))
		}
		f.Close()
	}
	return ips
}

// TestLocalTargetListensOnLoopbackOnly starts the whole local target (gateway pods, waypoints,
// ztunnels, balancers, backends, admin ports, TLS) and checks every socket this process listens
// on is bound to 127.0.0.0/8.
func TestLocalTargetListensOnLoopbackOnly(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("no /proc/self/net/tcp")
	}
	before := len(ownListeners(t))
	l, err := NewLocal(emulator.Config{Pods: 3, Workers: 2, WaypointPods: 2, WaypointWorkers: 2, TLS: true, Model: emulator.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ips := ownListeners(t)
	if len(ips)-before < 3*2+2 {
		t.Fatalf("found %d listening sockets, fewer than the pool's own: the check is not seeing them", len(ips)-before)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			t.Errorf("a socket listens on %s, beyond loopback", ip)
		}
	}
}
