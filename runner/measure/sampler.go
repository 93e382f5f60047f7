package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/stats"
)

// scrape reads /stats/prometheus from every pod in parallel. A pod that cannot be read yields
// an empty snapshot and an error naming it; the others are still returned.
func Scrape(ctx context.Context, t gateway.Target, pods []gateway.Pod) ([]stats.Snapshot, [][]byte, []error) {
	return Admins{T: t}.Scrape(ctx, pods)
}

// admins reads pods' Envoy admins with a timeout per attempt, so a hung endpoint costs at most
// a few timeouts, and reports reads that only succeeded on a retry through warn.
type Admins struct {
	T       gateway.Target
	Timeout time.Duration // per attempt; 0 is gateway.AdminTimeout
	Warn    func(string)
}

func (a Admins) Scrape(ctx context.Context, pods []gateway.Pod) ([]stats.Snapshot, [][]byte, []error) {
	return a.ScrapePath(ctx, pods, "/stats/prometheus")
}

// ScrapePath reads a Prometheus page at path from every pod in parallel (a kubelet's
// /metrics/cadvisor), as Scrape reads their stats.
func (a Admins) ScrapePath(ctx context.Context, pods []gateway.Pod, path string) ([]stats.Snapshot, [][]byte, []error) {
	snaps := make([]stats.Snapshot, len(pods))
	raws := make([][]byte, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i] = stats.Snapshot{Pod: p.Name, At: time.Now()}
			raw, err := a.Read(ctx, p, path)
			if err != nil {
				errs[i] = err
				return
			}
			s, err := stats.ParseSnapshot(p.Name, time.Now(), raw)
			if err != nil {
				errs[i] = fmt.Errorf("pod %s %s: %w", p.Name, path, err)
				return
			}
			snaps[i], raws[i] = s, raw
		}()
	}
	wg.Wait()
	return snaps, raws, errs
}

// adminAttempts is how many times an admin read is tried: a port-forward that drops or a pod
// that is restarting usually answers on the second try.
const adminAttempts = 3

func (a Admins) Read(ctx context.Context, p gateway.Pod, path string) ([]byte, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = gateway.AdminTimeout
	}
	var failed []string
	for i := 0; i < adminAttempts; i++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		b, err := a.T.Admin(actx, p, path)
		cancel()
		if err == nil {
			if len(failed) > 0 && a.Warn != nil {
				a.Warn(fmt.Sprintf("pod %s %s answered on attempt %d of %d, after: %s", p.Name, path, i+1, adminAttempts, strings.Join(failed, "; ")))
			}
			return b, nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		failed = append(failed, err.Error())
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100*(i+1)) * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("pod %s %s: %d attempts failed: %s", p.Name, path, len(failed), strings.Join(failed, "; "))
}

// sampler reads every pod once a second during the window and keeps a time series.
type Sampler struct {
	t     gateway.Target
	pods  []gateway.Pod
	names stats.Names
	base  map[string]stats.Pod
	start time.Time

	mu   sync.Mutex
	rows []row
	cols []string
	prev map[string]stats.Pod
	// Relist re-reads the gateway's pod list at every sample, for a window in which pods come
	// and go (a scenario's events): a new pod's counters start from zero, and a pod that is
	// gone keeps its column, empty from then on.
	Relist   bool
	last     map[string]stats.Snapshot
	lastRaw  map[string][]byte
	timeline []analysis.Sample
	prevAt   time.Time
	Peaks    analysis.Peaks
	closed   float64 // connections closed since the window began, at the last sample
	errors   int
	OnSample func(Live)
	// Clock is the time the samples are taken at: the wall clock (nil), or a virtual target's.
	Clock func() time.Time
}

// Live is what the live progress line shows.
type Live struct {
	Elapsed     time.Duration
	Connections map[string]float64 // active, per pod
	CV          float64            // of per-pod active connections
	RPS         float64
	// Refused and ProtocolErrors count, since the window began, streams refused over a cap
	// (http2.stream_refused_errors) and connections closed on a protocol error.
	Refused, ProtocolErrors float64
}

func NewSampler(t gateway.Target, pods []gateway.Pod, names stats.Names, pre []stats.Snapshot) *Sampler {
	s := &Sampler{t: t, pods: append([]gateway.Pod(nil), pods...), names: names, base: map[string]stats.Pod{}, prev: map[string]stats.Pod{},
		last: map[string]stats.Snapshot{}, lastRaw: map[string][]byte{}}
	for _, snap := range pre {
		p := stats.Extract(snap, names)
		s.base[p.Name], s.prev[p.Name] = p, p
	}
	s.cols = []string{"timestamp", "elapsed_s", "cv", "cv_cx_active", "cv_rps", "sum_cx", "sum_rq", "rps", "closed", "busy_max", "p99_ms"}
	return s
}

// row is one sample: the pool's columns, then each pod's active connections and request rate.
type row struct {
	fixed     []string
	cx, rates map[string]float64
}

// Run samples the window every interval of the wall clock until ctx ends.
func (s *Sampler) Run(ctx context.Context, every time.Duration) {
	s.Begin()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.sample(ctx)
		}
	}
}

// Begin starts the window now, on the sampler's clock. A target in virtual time begins the
// window and then calls Sample at each of its ticks, the pool standing still meanwhile.
func (s *Sampler) Begin() {
	now := s.now()
	s.mu.Lock()
	s.start, s.prevAt = now, now
	s.mu.Unlock()
}

// Sample reads every pod once and adds a row, as Run does at each tick.
func (s *Sampler) Sample(ctx context.Context) { s.sample(ctx) }

func (s *Sampler) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

// sample reads every pod once and adds a row. A round in which no pod could be read (the
// window ended while the reads were in flight, or every admin failed) adds no row: a row of
// zeros would read as a pool that went idle.
func (s *Sampler) sample(ctx context.Context) {
	pods := s.current(ctx)
	snaps, raws, errs := Scrape(ctx, s.t, pods)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	smp := analysis.Sample{Elapsed: now.Sub(s.start), Pods: map[string]analysis.PodSample{}}
	dt := now.Sub(s.prevAt).Seconds()
	var conns, active, rates []float64
	var sumRq, sumRate, closed, refused, protoErrs, sumActive, sumRqActive, rxBuf, pending, busyMax float64
	var window stats.Buckets
	perRate := map[string]float64{}
	liveConns := map[string]float64{}
	read := 0
	for i, snap := range snaps {
		if errs[i] != nil {
			s.errors++
			continue
		}
		read++
		s.last[pods[i].Name], s.lastRaw[pods[i].Name] = snap, raws[i]
		cur := stats.Extract(snap, s.names)
		since, _ := stats.Delta(s.base[cur.Name], cur)
		last, _ := stats.Delta(s.prev[cur.Name], cur)
		conns = append(conns, since.CxHTTP2Total)
		active = append(active, cur.CxActive)
		rate := last.RqTotal / dt
		rates = append(rates, rate)
		perRate[cur.Name] = rate
		liveConns[cur.Name] = cur.CxActive
		sumRq += since.RqTotal
		sumRate += rate
		closed += since.CxDestroy
		refused += since.StreamRefused
		protoErrs += since.ProtocolErrors
		sumActive += cur.CxActive
		sumRqActive += cur.RqActive
		rxBuf += cur.RxBuffered
		pending += cur.PendingActive
		window = window.Add(last.RqTime)
		ps := analysis.PodSample{RPS: rate, CxActive: cur.CxActive, NewCx: last.CxTotal, Handshakes: last.SSLHandshake,
			Workers: len(cur.WorkerBusyNs)}
		for _, ns := range last.WorkerBusyNs {
			busy := ns / (dt * 1e9)
			busyMax = math.Max(busyMax, busy)
			ps.BusyMax = math.Max(ps.BusyMax, busy)
			ps.CPU += busy
		}
		smp.Pods[cur.Name] = ps
		s.prev[cur.Name] = cur
	}
	if read == 0 {
		return
	}
	s.prevAt = now
	s.closed = closed
	s.Peaks.CxActive = math.Max(s.Peaks.CxActive, sumActive)
	s.Peaks.RqActive = math.Max(s.Peaks.RqActive, sumRqActive)
	s.Peaks.RxBuffered = math.Max(s.Peaks.RxBuffered, rxBuf)
	s.Peaks.Pending = math.Max(s.Peaks.Pending, pending)
	s.Peaks.WorkerBusy = math.Max(s.Peaks.WorkerBusy, busyMax)
	p99 := window.Quantile(0.99)
	if math.IsNaN(p99) {
		p99 = 0
	}
	fixed := []string{fmt.Sprintf("%.3f", float64(now.UnixMilli())/1000), fmt.Sprintf("%.3f", now.Sub(s.start).Seconds()),
		f3(analysis.CV(conns)), f3(analysis.CV(active)), f3(analysis.CV(rates)), num(sumActive), num(sumRq),
		fmt.Sprintf("%.1f", sumRate), num(closed), f3(busyMax), fmt.Sprintf("%.2f", p99)}
	s.rows = append(s.rows, row{fixed: fixed, cx: liveConns, rates: perRate})
	s.timeline = append(s.timeline, smp)
	if s.OnSample != nil {
		s.OnSample(Live{Elapsed: now.Sub(s.start), Connections: liveConns, CV: analysis.CV(active), RPS: sumRate,
			Refused: refused, ProtocolErrors: protoErrs})
	}
}

// closedDuringLoad is how many connections had closed since the window began, at the last
// sample taken while the load ran: with clients that keep their connections, the ones the
// gateway drained.
func (s *Sampler) ClosedDuringLoad() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

// CSV renders the time series: the pool's columns, then a column per pod seen in the window
// for active connections and one for its request rate (empty while the pod did not exist).
func (s *Sampler) CSV() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols := append([]string(nil), s.cols...)
	for _, p := range s.pods {
		cols = append(cols, "cx_active:"+p.Name)
	}
	for _, p := range s.pods {
		cols = append(cols, "rps:"+p.Name)
	}
	lines := []string{strings.Join(cols, ",")}
	for _, r := range s.rows {
		out := append([]string(nil), r.fixed...)
		for _, p := range s.pods {
			out = append(out, cell(r.cx, p.Name, num))
		}
		for _, p := range s.pods {
			out = append(out, cell(r.rates, p.Name, func(v float64) string { return fmt.Sprintf("%.1f", v) }))
		}
		lines = append(lines, strings.Join(out, ","))
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// cell renders a pod's value in a row: empty when the pod was not read in it. A window
// without events reads every pod in every row, so its file is what it always was.
func cell(m map[string]float64, pod string, f func(float64) string) string {
	v, ok := m[pod]
	if !ok {
		return ""
	}
	return f(v)
}

// current is the pods to read in this sample: the window's, and with Relist every pod the
// target lists now, added as it appears (its counters start from zero).
func (s *Sampler) current(ctx context.Context) []gateway.Pod {
	var now []gateway.Pod
	var err error
	if s.Relist {
		now, err = s.t.Pods(ctx, gateway.Gateway) // outside the lock: a listing may take a while
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.Relist || err != nil {
		return append([]gateway.Pod(nil), s.pods...)
	}
	at, listed := map[string]int{}, map[string]bool{}
	for i, p := range s.pods {
		at[p.Name] = i
	}
	for _, p := range now {
		if i, seen := at[p.Name]; seen {
			s.pods[i] = p // a restarted container may answer on another admin address
		} else {
			s.pods = append(s.pods, p)
			s.base[p.Name], s.prev[p.Name] = stats.Pod{Name: p.Name}, stats.Pod{Name: p.Name}
		}
		listed[p.Name] = true
	}
	var out []gateway.Pod
	for _, p := range s.pods {
		if listed[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// Seen is every gateway pod the window saw, in the order they appeared.
func (s *Sampler) Seen() []gateway.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Pod(nil), s.pods...)
}

// Last is a pod's last snapshot read in the window, and its text; ok is false if none was.
func (s *Sampler) Last(pod string) (stats.Snapshot, []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.last[pod]
	return snap, s.lastRaw[pod], ok
}

// Timeline is the window's samples, pod by pod.
func (s *Sampler) Timeline() []analysis.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]analysis.Sample(nil), s.timeline...)
}
