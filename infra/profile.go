package infra

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The lab's sizes (igwlab:profile). Each keeps every pod as it is (a gateway pod has its
// proxyConcurrency workers and as many CPUs, request = limit; every other pod its requests and
// limits) and sets how many run. The full lab is the seed lab's: six gateway pods and two of
// each backend, 9.5 CPUs of requests on k3d, for a Docker VM of 4 CPUs or more. The small one
// runs four gateway pods and one of each backend, 7.2 CPUs, which a Docker VM of 3 CPUs holds.
// The phenomenon lives inside one gateway pod's workers, but the findings compare how requests
// spread across pods, and the spread of one connection's load is capped at sqrt(pods-1): on the
// local target at the same requests and limits, four pods gave the six pods' verdict on every
// finding the end-to-end test holds, and three lost two of them (docs/real-lab.md, "The small
// lab"). The waypoint keeps its three pods (100m each). gatewayReplicas and the other keys still
// override a profile's sizes.
const (
	ProfileFull  = "full"
	ProfileSmall = "small"
)

// Profile is one size of the lab.
type Profile struct {
	GatewayReplicas int
	BackendReplicas int // of httpbin and of grpcbin each
}

// Profiles are the lab's sizes, by name.
var Profiles = map[string]Profile{
	ProfileFull:  {GatewayReplicas: 6, BackendReplicas: 2},
	ProfileSmall: {GatewayReplicas: 4, BackendReplicas: 1},
}

// WithProfile is c at the named profile's sizes.
func (c Config) WithProfile(name string) Config {
	p := Profiles[name]
	c.Profile, c.GatewayReplicas, c.BackendReplicas = name, p.GatewayReplicas, p.BackendReplicas
	return c
}

func profilesText() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(Profiles)) {
		p := Profiles[n]
		parts = append(parts, fmt.Sprintf("%s (%d gateway pods, %d of each backend)", n, p.GatewayReplicas, p.BackendReplicas))
	}
	return strings.Join(parts, " or ")
}
