package sim

import (
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// Harness is the machine the local target runs on, for a simulation that is to read as the
// local target does (the calibration tier, --harness): there the clients, the pods' sockets and
// HTTP/2 codec, and the backends share a few cores, and past what those cores do a second the
// clients cannot send faster, whatever the gateway's workers could take. Each request costs the
// machine Request, PerKiB for each KiB of its response and Hop for each proxy hop past the
// gateway (the waypoint), booked on the least busy of Cores as it leaves the client, which it cannot do before that core takes the work up. The
// zero Harness is none: the clients keep up with any gateway, as a production pool's many
// client machines do.
type Harness struct {
	Cores                int
	Request, PerKiB, Hop time.Duration
}

// LocalHarness is the local target's machine as the calibration tier measured it on two cores
// (docs/sim-target.md; the calibration tier fits Request to each local run it compares): 01-baseline's 100 connections top out near
// 8,700 requests a second (230 µs of the machine each), 03-mcs-cap's 16 KiB responses near
// 5,700 (7 µs more per KiB), 06-waypoint-baseline's extra hop near 6,300 (90 µs more).
var LocalHarness = Harness{Cores: 2, Request: 230 * time.Microsecond, PerKiB: 7 * time.Microsecond, Hop: 90 * time.Microsecond}

// machine is the harness's cores, each a single server of the model (model.WorkerQ).
type machine struct {
	h     Harness
	cores []*model.WorkerQ
}

func newMachine(h Harness) *machine {
	if h.Cores <= 0 {
		return nil
	}
	m := &machine{h: h}
	for range h.Cores {
		m.cores = append(m.cores, model.NewWorkerQ(nil))
	}
	return m
}

// cost is what a request costs the machine.
func (m *machine) cost(q request, hops int) time.Duration {
	return m.h.Request + time.Duration(q.resp)*m.h.PerKiB/1024 + time.Duration(hops)*m.h.Hop
}

// book queues a request's work on the least busy core and returns when the core takes it up:
// the machine bounds the rate requests leave at, and delays them only while it is saturated
// (its work runs alongside the request's way through the pool, not ahead of it).
func (m *machine) book(now time.Time, d time.Duration) time.Time {
	best := m.cores[0]
	for _, c := range m.cores[1:] {
		if c.Backlog(now) < best.Backlog(now) {
			best = c
		}
	}
	return best.Book(now, nil, d, nil).Start
}
