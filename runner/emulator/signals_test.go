package emulator

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/igwlab/igwlab/stacks"
)

// A worker held in one piece of work past the guard dog's miss interval counts a watchdog miss,
// and past a second a mega miss, on its own thread's counters only (GuardDogImpl::step); the
// other worker, touched by its loop's timer, counts none.
func TestStuckWorkerMissesItsWatchdog(t *testing.T) {
	p := testPool(t, Config{Workers: 2}, stacks.Knobs{})
	pod := p.Pods()[0]
	if err := p.StallWorker(0, 0, 1300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // a miss is counted while the worker is still stuck
	checkStats(t, pod, map[string]int64{"server.worker_0.watchdog_miss": 1, "server.worker_0.watchdog_mega_miss": 0})
	time.Sleep(time.Second)
	checkStats(t, pod, map[string]int64{
		"server.worker_0.watchdog_miss": 1, "server.worker_0.watchdog_mega_miss": 1,
		"server.worker_1.watchdog_miss": 0, "server.worker_1.watchdog_mega_miss": 0,
	})
}

// The signals as a gateway's Prometheus endpoint gives them: the watchdog counters tagged with
// the thread (Istio's thread_name tag), the dispatcher histograms only with dispatcher stats on,
// the worker in their name.
func TestWorkerSignalsOnPrometheus(t *testing.T) {
	for _, on := range []bool{false, true} {
		p := testPool(t, Config{Workers: 2, DispatcherStats: on}, stacks.Knobs{})
		pod := p.Pods()[0]
		time.Sleep(250 * time.Millisecond) // a few touch-timer iterations
		fams := scrape(t, pod.AdminURL()+"/stats/prometheus")
		miss := fams["envoy_server_watchdog_miss"]
		if miss == nil || len(miss.Metric) != 2 {
			t.Fatalf("envoy_server_watchdog_miss: %v, want one series per worker", miss)
		}
		for i, m := range miss.Metric {
			if got := m.GetLabel()[0]; got.GetName() != "thread_name" || got.GetValue() != []string{"worker_0", "worker_1"}[i] {
				t.Errorf("series %d labelled %v", i, m.GetLabel())
			}
		}
		for _, name := range []string{"envoy_listener_manager_worker_1_dispatcher_loop_duration_us", "envoy_listener_manager_worker_1_dispatcher_poll_delay_us"} {
			f := fams[name]
			if !on {
				if f != nil {
					t.Errorf("%s without dispatcher stats", name)
				}
				continue
			}
			if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || f.Metric[0].GetHistogram().GetSampleCount() == 0 {
				t.Errorf("%s: %v, want a histogram with the idle loop's timer wakes", name, f)
			}
		}
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
