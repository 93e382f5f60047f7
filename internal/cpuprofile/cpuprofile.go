// Package cpuprofile starts a CPU profile for the commands' -cpuprofile flags.
package cpuprofile

import (
	"os"
	"runtime/pprof"
)

// Start writes a CPU profile of this process to path until the returned stop is called; an
// empty path profiles nothing.
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
