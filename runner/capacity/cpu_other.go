//go:build !unix

package capacity

import "time"

// processCPU is not measured here.
func processCPU() (time.Duration, bool) { return 0, false }

// loadAverage is not known here.
func loadAverage() float64 { return 0 }
