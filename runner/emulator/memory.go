package emulator

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/igwlab/igwlab/runner/model"
	"github.com/igwlab/igwlab/stacks"
)

// A gateway pod's memory, as its container's limit bounds it. Each emulated pod counts what it
// holds: a share for every connection and every stream Envoy keeps, the request headers it
// saved, and every byte buffered for a connection or stream (its read buffer, its write buffer,
// a request body the upstream has not read, a response waiting for the client's windows), in
// Envoy's 16 KiB buffer slices (source/common/buffer/buffer_impl.h). Istio's gateway bootstrap
// has no overload manager (tools/packaging/common/envoy_bootstrap.json), so nothing in Envoy
// sheds load as memory grows: past the limit the kernel kills the container (OOMKilled, exit
// code 137) and the kubelet restarts it, at once the first time and then after a back-off of 10 s
// doubling to 5 min, forgotten after 10 min without a crash (k8s.io/kubernetes v1.34
// pkg/kubelet/kubelet.go newCrashLoopBackOff, kuberuntime_manager.go doBackOff; client-go
// util/flowcontrol/backoff.go). No client, however hostile, makes the pool hold more than pods x
// limit.

// DefaultMemoryLimit is the gateway container's memory limit: the Istio gateway chart's default
// (manifests/charts/gateway/values.yaml resources.limits.memory, 1024Mi), which the lab's own
// gateway keeps (infra/gateway.go); infra/istioproof checks it against the chart.
const DefaultMemoryLimit = stacks.GatewayMemoryLimit

// Envoy publishes no figure for what a connection or a stream costs it (envoyproxy/envoy#11421
// asks for one and is open). These are estimates of its structures for a stream through
// Istio's gateway filter chain (the codec's stream and its oghttp2 state, the connection
// manager's stream with its stream info and filter manager, the filters, the router's upstream
// request, the header maps) and for an HTTP/2 connection (its network connection, codec session
// and HPACK tables); --stream-memory moves the first.
const (
	DefaultStreamMemory = 16 << 10
	connMemory          = 16 << 10
	headerOverhead      = 64 // per saved header: Envoy's HeaderString and list entry around name and value
	sliceSize           = 16 << 10
)

// sliced is what n buffered bytes take in Envoy's buffer slices.
func sliced(n int) int64 { return int64((n + sliceSize - 1) / sliceSize * sliceSize) }

// podMemory is one pod process's count against its limit.
type podMemory struct {
	pod   *Pod
	limit int64 // 0: no limit
	used  atomic.Int64
	peak  atomic.Int64
	oom   atomic.Bool
}

func newPodMemory(p *Pod, limit int64) *podMemory { return &podMemory{pod: p, limit: limit} }

// add counts n more bytes held (negative: released). Past the limit the pod is OOM-killed.
func (m *podMemory) add(n int64) {
	if m == nil || n == 0 {
		return
	}
	u := m.used.Add(n)
	if n < 0 {
		return
	}
	for {
		p := m.peak.Load()
		if u <= p || m.peak.CompareAndSwap(p, u) {
			break
		}
	}
	if m.limit > 0 && u > m.limit && m.oom.CompareAndSwap(false, true) {
		go m.pod.pool.oomKill(m.pod, u)
	}
}

// Used is what the pod holds now.
func (m *podMemory) Used() int64 { return m.used.Load() }

// crashBackOff is the kubelet's restart back-off for one container (model.BackOff).
type crashBackOff = model.BackOff

// oomKill kills a pod whose memory passed its limit, as the kernel does, and restarts it as the
// kubelet does. Both are recorded as events, so a run shows them among its disruptions.
func (p *Pool) oomKill(pod *Pod, used int64) {
	if !pod.Up() {
		return
	}
	open := pod.OpenConnections()
	streams := pod.openStreams()
	pod.stop()
	pod.stopAdmin()
	delay := pod.backoff.Delay(time.Now())
	p.event("oom-killed", pod.Name, fmt.Sprintf("held %d MiB against its %d MiB limit (%d connections, %d streams) "+
		"when the kernel killed it: OOMKilled, exit code 137, restart %d; the kubelet restarts it after %s",
		used>>20, pod.mem.limit>>20, open, streams, pod.backoff.Count, delay))
	time.AfterFunc(delay, func() {
		if p.closed.Load() {
			return
		}
		if i := pod.Index; pod.role == roleGateway {
			_ = p.RestartPod(i)
		}
	})
}

// openStreams counts the streams the pod's connections hold.
func (p *Pod) openStreams() int {
	p.mu.Lock()
	conns := p.connsLocked()
	p.mu.Unlock()
	n := 0
	for _, sc := range conns {
		sc.mu.Lock()
		n += len(sc.streams)
		sc.mu.Unlock()
	}
	return n
}

// release gives back what a finished stream held.
func (st *stream) release() {
	m := st.sc.mem
	st.bmu.Lock()
	body := st.body.Len()
	st.body.Reset()
	st.bmu.Unlock()
	m.add(-int64(body))
	st.sc.mu.Lock()
	st.pendingDrop()
	headers := st.headerBytes
	st.sc.mu.Unlock()
	if st.envoy {
		m.add(-st.sc.h.pod.pool.cfg.streamMemory() - headers)
	}
}

// releaseBuffers gives back a closed connection's buffers.
func (sc *serverConn) releaseBuffers() {
	m := sc.mem
	sc.in.mu.Lock()
	m.add(-int64(len(sc.in.data)))
	sc.in.data = nil
	sc.in.mu.Unlock()
	m.add(-sc.queued.Swap(0))
}

// streamMemory is the share each stream of the pool's pods counts.
func (c *Config) streamMemory() int64 {
	if c.StreamMemory > 0 {
		return c.StreamMemory
	}
	return DefaultStreamMemory
}
