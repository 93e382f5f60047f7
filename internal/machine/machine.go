// Package machine names the machine a measurement ran on, for reading results later.
package machine

import (
	"os"
	"strings"
)

// CPUModel names the processor (Linux only; "" elsewhere).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
