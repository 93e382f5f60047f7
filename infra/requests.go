package infra

import (
	"fmt"
	"sort"

	"github.com/igwlab/igwlab/stacks"
)

// K3dNodes is the k3d cluster's node count (k3d-cluster.sh: 1 server, 2 agents). Each node is
// a container of the one Docker VM and reports all of that VM's CPUs and memory as its own.
const K3dNodes = 3

// The resource requests of the lab's own pods (one place: backend.go and loadgen.go use them).
var (
	httpbinResources  = podResources{"200m", "64Mi", "1", "256Mi"}
	grpcbinResources  = podResources{"100m", "32Mi", "1", "128Mi"}
	loadgenResources  = podResources{"500m", "256Mi", "2", "1Gi"}
	gatewayMemRequest = "256Mi"
	gatewayMemLimit   = "1Gi"
)

// K3sSystemRequests is what each of k3s's own kube-system Deployments that the lab's k3d
// cluster keeps asks for: coredns 100m and 70Mi (k3s-io/k3s manifests/coredns.yaml, read), and
// metrics-server the same in the k3s releases the lab pins (manifests/metrics-server/
// metrics-server-deployment.yaml; the copy readable here predates its requests, so this one is
// not seen here). traefik is disabled by k3d-cluster.sh; local-path-provisioner asks for nothing
// (manifests/local-storage.yaml, read).
var K3sSystemRequests = Request{CPUMilli: 100, MemBytes: 70 << 20}

// The requests Istio's charts give their pods at the lab's values (Istio 1.27's values.yaml:
// istiod's resources, ztunnel's and istio-cni's per node, and global.proxy.resources for the
// waypoint, which istiod deploys from its proxy template). infra/istioproof renders the charts
// and checks these against them.
var (
	IstiodRequests   = Request{CPUMilli: 500, MemBytes: 2048 << 20}
	ZtunnelRequests  = Request{CPUMilli: 200, MemBytes: 512 << 20}
	CNIRequests      = Request{CPUMilli: 100, MemBytes: 100 << 20}
	WaypointRequests = Request{CPUMilli: 100, MemBytes: 128 << 20}
)

type podResources struct{ cpuReq, memReq, cpuLim, memLim string }

// Request is one pod's CPU (millicores) and memory (bytes) request.
type Request struct {
	CPUMilli int64 `yaml:"cpuMilli" json:"cpuMilli"`
	MemBytes int64 `yaml:"memBytes" json:"memBytes"`
}

// PodGroup is pods of one kind and what each requests. PerNode pods run on every node (a
// DaemonSet's).
type PodGroup struct {
	What    string
	Pods    int
	PerNode bool
	Request
}

// Requests lists the pods the lab asks the scheduler for on a cluster of nodes, at cfg's values:
// the gateway (workers CPUs each, request = limit), istiod, ztunnel and istio-cni on every
// node, the waypoint (scenarios 06 and 07), the backends and the load generators, and on k3d
// k3s's own coredns and metrics-server. kube-prometheus-stack's pods are not counted: its chart
// sets no requests by default.
func (c Config) Requests(nodes int) []PodGroup {
	mem := func(q string) int64 { return mustBytes(q) }
	cpu := func(q string) int64 { return mustMilli(q) }
	var system []PodGroup
	if c.Cluster == ClusterK3d {
		system = []PodGroup{{"k3s coredns and metrics-server", 2, false, K3sSystemRequests}}
	}
	return append(system, []PodGroup{
		{"gateway", c.GatewayReplicas, false, Request{int64(gatewayRequest(c)), mem(gatewayMemRequest)}},
		{"istiod", 1, false, IstiodRequests},
		{"ztunnel", nodes, true, ZtunnelRequests},
		{"istio-cni", nodes, true, CNIRequests},
		{"waypoint (scenarios 06, 07)", c.WaypointReplicas, false, WaypointRequests},
		{"httpbin", c.BackendReplicas, false, Request{cpu(httpbinResources.cpuReq), mem(httpbinResources.memReq)}},
		{"grpcbin", c.BackendReplicas, false, Request{cpu(grpcbinResources.cpuReq), mem(grpcbinResources.memReq)}},
		{"fortio", 1, false, Request{cpu(loadgenResources.cpuReq), mem(loadgenResources.memReq)}},
		{"h2dial", 1, false, Request{cpu(loadgenResources.cpuReq), mem(loadgenResources.memReq)}},
	}...)
}

// NodeCPUsNeeded is the whole CPUs each of n equal nodes must offer for every pod of groups to
// be scheduled (0 if none up to 256 would do).
func NodeCPUsNeeded(groups []PodGroup, n int) int64 {
	for cpus := int64(1); cpus <= 256; cpus++ {
		if len(Unschedulable(groups, Nodes(n, cpus*1000))) == 0 {
			return cpus
		}
	}
	return 0
}

// K3dNeeds is what the lab asks of the Docker VM its k3d cluster runs in, at c's values: the
// CPUs each node must report for every pod to be scheduled (each reports the whole VM), and
// the CPU and memory its pods request in all, which the VM's real cores and memory carry.
func (c Config) K3dNeeds() (nodeCPUs int64, total Request) {
	groups := c.Requests(K3dNodes)
	return NodeCPUsNeeded(groups, K3dNodes), Total(groups)
}

// Nodes is n nodes offering cpuMilli each.
func Nodes(n int, cpuMilli int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = cpuMilli
	}
	return out
}

// Total sums what the groups request.
func Total(groups []PodGroup) Request {
	var t Request
	for _, g := range groups {
		t.CPUMilli += int64(g.Pods) * g.CPUMilli
		t.MemBytes += int64(g.Pods) * g.MemBytes
	}
	return t
}

// Unschedulable places the pods on nodes offering alloc (millicores each), as the scheduler
// would fill them (every node's DaemonSet pods first, then the largest pods first onto the node
// with the most room), and lists the pods that fit nowhere: they would stay Pending.
func Unschedulable(groups []PodGroup, alloc []int64) []string {
	free := append([]int64(nil), alloc...)
	type pod struct {
		what string
		cpu  int64
	}
	var pods []pod
	var pending []string
	for _, g := range groups {
		if g.PerNode {
			for i := range free {
				if free[i] < g.CPUMilli {
					pending = append(pending, fmt.Sprintf("%s on node %d", g.What, i+1))
					continue
				}
				free[i] -= g.CPUMilli
			}
			continue
		}
		for range g.Pods {
			pods = append(pods, pod{g.What, g.CPUMilli})
		}
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].cpu > pods[j].cpu })
	for _, p := range pods {
		best := -1
		for i := range free {
			if free[i] >= p.cpu && (best < 0 || free[i] > free[best]) {
				best = i
			}
		}
		if best < 0 {
			pending = append(pending, p.what)
			continue
		}
		free[best] -= p.cpu
	}
	return pending
}

// mustMilli and mustBytes read the lab's own quantities (fixed above, so a bad one is a bug).
func mustMilli(q string) int64 {
	var n int64
	if _, err := fmt.Sscanf(q, "%dm", &n); err == nil && len(q) > 1 && q[len(q)-1] == 'm' {
		return n
	}
	if _, err := fmt.Sscanf(q, "%d", &n); err != nil {
		panic("cpu quantity " + q)
	}
	return n * 1000
}

func mustBytes(q string) int64 {
	var n int64
	var unit string
	if _, err := fmt.Sscanf(q, "%d%s", &n, &unit); err != nil {
		panic("memory quantity " + q)
	}
	switch unit {
	case "Ki":
		return n << 10
	case "Mi":
		return n << 20
	case "Gi":
		return n << 30
	}
	panic("memory quantity " + q)
}

// gatewayRequest is the gateway container's CPU request in millicores.
func gatewayRequest(c Config) stacks.CPU {
	_, req := c.GatewayCPU()
	return req
}
