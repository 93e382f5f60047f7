//go:build !linux

package emulator

// kernelHashesReusePort: elsewhere (macOS, BSD) SO_REUSEPORT does not balance TCP
// connections, so the emulator hashes the peer address itself, as Linux would.
const kernelHashesReusePort = false
