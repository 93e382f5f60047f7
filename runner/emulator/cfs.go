package emulator

import (
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// cpuQuota is a gateway container's CPU limit as the kernel enforces it (CFS bandwidth control
// over its workers): the pool's model of it, runner/model/cfs.go, on the wall clock.
type cpuQuota = model.Quota

// CFSStats are a container's cpu.stat counters as cAdvisor reports them.
type CFSStats = model.CFSStats

// newCPUQuota is the quota of a limit in millicores for a container starting now (0: none, nil).
func newCPUQuota(limitMilli, requestMilli int64) *cpuQuota {
	return model.NewQuota(limitMilli, requestMilli, time.Now())
}
