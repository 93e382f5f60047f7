package model

import "math/rand/v2"

// Where a connection lands: the L4 balancer in front of the pods picks a pod once for the
// connection's life, and the pod's listener picks one of its workers; every request of the
// connection is then served by that one worker of that one pod.

// Balance modes of the L4 balancer (the Service VIP).
const (
	BalanceRandom     = "random"      // kube-proxy iptables: a random endpoint per connection
	BalanceRoundRobin = "round-robin" // IPVS rr
	BalanceSourceHash = "source-hash" // IPVS sh / an L4 LB with client affinity: one pod per client IP
)

// L4 is the balancer's state: its random source and round-robin position.
type L4 struct {
	Mode string
	rng  *rand.Rand
	rr   int
}

// NewL4 is a balancer of mode, its random picks seeded by seed.
func NewL4(mode string, seed uint64) *L4 {
	return &L4{Mode: mode, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Reseed starts the balancer's picks afresh from seed, and its round robin from the first pod.
// The pools reseed it as each scenario's setup is applied (ScenarioSeed): a scenario's
// placements then follow from the pool's seed and how many setups came before, not from every
// connection earlier runs opened, so two targets given one seed place a scenario's connections
// alike (the calibration tier compares them scenario by scenario).
func (b *L4) Reseed(seed uint64) {
	b.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b.rr = 0
}

// ScenarioSeed is the balancer's seed for the n-th setup applied to a pool of seed pool.
func ScenarioSeed(pool uint64, n int) uint64 { return pool + uint64(n)*0xbf58476d1ce4e5b9 }

// Pick chooses among n ready pods (in slot order) for a connection from clientIP: kube-proxy's
// iptables rules pick an endpoint at random (statistic mode random), IPVS round-robin in turn,
// source hashing by the client's address. -1 when none is ready. Not safe for concurrent use.
func (b *L4) Pick(n int, clientIP string) int {
	if n == 0 {
		return -1
	}
	switch b.Mode {
	case BalanceRoundRobin:
		b.rr++
		return b.rr % n
	case BalanceSourceHash:
		return int(HashAddr(clientIP) % uint32(n))
	default:
		return b.rng.IntN(n)
	}
}

// Accept is how a pod's listener hands a connection to a worker.
type Accept struct {
	// Exact is connection_balance_config.exact_balance; ReusePort enable_reuse_port.
	Exact, ReusePort bool
	// Socket is the worker's socket the kernel's SO_REUSEPORT selection woke, -1 when the
	// connection did not pass it (handed over by an L4 balancer, or on a kernel that does not
	// hash reuse_port groups the way Linux does).
	Socket int
	// Peer is the connection's peer address ("ip:port").
	Peer string
}

// PickWorker chooses the worker of a pod for a connection. With exact_balance the one with the
// fewest active connections (the lowest id on a tie), which the caller counts before it lets
// another pick happen (ExactConnectionBalancerImpl::pickTargetHandler increments the count under
// its mutex); with reuse_port off, any waiting worker (rng); else the kernel's SO_REUSEPORT hash
// of the 4-tuple (reuseport_select_sock), which a connection handed over without passing it gets
// as a hash of its peer address.
func PickWorker(a Accept, active []int64, rng *rand.Rand) int {
	switch {
	case a.Exact:
		w := 0
		for i := 1; i < len(active); i++ {
			if active[i] < active[w] {
				w = i
			}
		}
		return w
	case !a.ReusePort:
		return rng.IntN(len(active))
	case a.Socket < 0:
		return int(HashAddr(a.Peer) % uint32(len(active)))
	default:
		return a.Socket
	}
}

// HashAddr is FNV-1a of an address.
func HashAddr(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
