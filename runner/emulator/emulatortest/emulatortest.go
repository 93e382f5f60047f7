// Package emulatortest starts the emulated gateway pool for tests that need live Envoy admins
// to read: gateway pods only, Envoy's defaults in force, closed when the test ends.
package emulatortest

import (
	"testing"

	"github.com/igwlab/igwlab/runner/emulator"
)

// Gateways starts pods gateway pods of workers workers each; seed fixes where the VIP places
// connections (0: a fresh draw each run).
func Gateways(t testing.TB, pods, workers int, seed uint64) *emulator.Pool {
	t.Helper()
	p, err := emulator.Start(emulator.Config{Pods: pods, Workers: workers, WaypointPods: 0, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Apply(emulator.Setup{})
	return p
}
