package emulator

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/igwlab/igwlab/h2dial"
)

func TestProfileHarness(t *testing.T) {
	if os.Getenv("IGWLAB_PROF") == "" {
		t.Skip("set IGWLAB_PROF")
	}
	st, _ := time.ParseDuration(os.Getenv("IGWLAB_ST"))
	p, err := Start(Config{Pods: 6, Workers: 1, Model: Model{ServiceTime: st, PerKiB: 2 * time.Microsecond, ConnCost: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, _ := os.Create(os.Getenv("IGWLAB_PROF"))
	pprof.StartCPUProfile(f)
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + os.Getenv("IGWLAB_PATH"), Mode: h2dial.Mode(os.Getenv("IGWLAB_MODE")), Concurrency: func() int {
		c := 100
		if v := os.Getenv("IGWLAB_C"); v != "" {
			fmt.Sscan(v, &c)
		}
		return c
	}(), Duration: 5 * time.Second})
	pprof.StopCPUProfile()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rps %.0f p50 %.2f p99 %.2f conns %d", res.RPS, res.Latency.P50, res.Latency.P99, res.ConnectionsOpened)
}
