package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"syscall"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
)

// HarnessStep is one offered rate against the local pool.
type HarnessStep struct {
	OfferedRPS  float64 `json:"offered_rps"`
	AchievedRPS float64 `json:"achieved_rps"`
	// BusyRatio is the pool's measured busy time over offered load x service time: 1 when
	// every offered request reached a worker and was served on the virtual clock.
	BusyRatio float64 `json:"busy_vs_offered"`
	Errors    int64   `json:"errors"`
	Unsent    int64   `json:"unsent"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// EmulatorCPUUs is this process's CPU (emulator, balancer and httpbin backends) per request.
	EmulatorCPUUs float64 `json:"emulator_cpu_us_per_request"`
	ClientCPUUs   float64 `json:"client_cpu_us_per_request"`
	OK            bool    `json:"ok"`
}

// HarnessResult is the capacity sweep.
type HarnessResult struct {
	Setup string        `json:"setup"`
	Steps []HarnessStep `json:"steps"`
	// CapacityRPS is the highest offered rate the harness carried faithfully: achieved and
	// busy time both within 5% of what was offered, no errors.
	CapacityRPS float64 `json:"capacity_rps"`
}

// harnessModel gives the pool far more emulated capacity than the machine has, so what the
// sweep finds is the harness's limit, not the model's: 6 pods x 2 workers at 50 us a request
// is 240k rps.
var harnessModel = emulator.Model{ServiceTime: 50 * time.Microsecond}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// harnessBench offers rising open-loop rates from h2dial (its own process) to the emulated pool
// (this process) until the harness stops carrying them faithfully.
func harnessBench(ctx context.Context, o Options, progress io.Writer) (*HarnessResult, error) {
	pool, err := emulator.Start(emulator.Config{Pods: 6, Workers: 2, WaypointPods: 0, Model: harnessModel})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	const conns, window = 64, 5 * time.Second
	res := &HarnessResult{Setup: fmt.Sprintf("6 pods x 2 workers, %s per request, L4 balancer, go-httpbin /get upstream; h2dial open loop over %d connections, %s per step",
		harnessModel.ServiceTime, conns, window)}
	url := "http://" + pool.VIP() + "/get"
	failures := 0
	for rate := 2500.0; rate <= 60000 && failures < 2; rate += 2500 {
		fmt.Fprintf(progress, "harness: offering %.0f rps\n", rate)
		busy0, cpu0 := poolBusy(pool), selfCPU()
		out, clientCPU, _, err := measured(ctx, nil, o.H2dial, "-url", url, "-mode", "distinct", "-c", strconv.Itoa(conns),
			"-qps", strconv.FormatFloat(rate, 'f', 0, 64), "-duration", window.String(), "-json")
		if err != nil {
			return nil, err
		}
		busy, cpu := poolBusy(pool)-busy0, selfCPU()-cpu0
		var r struct {
			Requests, Errors, Unsent int64
			ElapsedS                 float64 `json:"elapsed_s"`
			Latency                  struct {
				P50 float64 `json:"p50_ms"`
				P99 float64 `json:"p99_ms"`
			}
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, fmt.Errorf("h2dial output: %w", err)
		}
		st := HarnessStep{OfferedRPS: rate, AchievedRPS: float64(r.Requests) / window.Seconds(), Errors: r.Errors, Unsent: r.Unsent,
			P50Ms: r.Latency.P50, P99Ms: r.Latency.P99,
			BusyRatio: busy.Seconds() / (rate * window.Seconds() * harnessModel.ServiceTime.Seconds())}
		if r.Requests > 0 {
			st.EmulatorCPUUs = float64(cpu.Microseconds()) / float64(r.Requests)
			st.ClientCPUUs = float64(clientCPU.Microseconds()) / float64(r.Requests)
		}
		st.OK = r.Errors == 0 && math.Abs(st.AchievedRPS/rate-1) <= 0.05 && math.Abs(st.BusyRatio-1) <= 0.05
		res.Steps = append(res.Steps, st)
		if st.OK {
			res.CapacityRPS = rate
			failures = 0
		} else {
			failures++
		}
	}
	return res, nil
}

func poolBusy(p *emulator.Pool) time.Duration {
	var d time.Duration
	for _, pod := range p.Pods() {
		for _, w := range pod.Workers() {
			d += w.Busy()
		}
	}
	return d
}
