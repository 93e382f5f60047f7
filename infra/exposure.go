package infra

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/igwlab/igwlab/internal/configkey"
)

// The gateway Service's types the lab allows (igwlab:gatewayServiceType). Istio's gateway chart
// defaults to LoadBalancer (manifests/charts/gateway/values.yaml service.type), which on GKE is
// an external load balancer open to 0.0.0.0/0 and on EKS an internet-facing ELB, and which a
// cluster without a load-balancer controller never gives an address, so Helm waits out its
// timeout. Nothing in the lab needs one off k3d: the clients use the Service's DNS name inside
// the cluster and the runner reaches the pods through the API server.
const (
	ServiceClusterIP    = "ClusterIP"
	ServiceLoadBalancer = "LoadBalancer"
	ServiceNodePort     = "NodePort"
)

var serviceTypes = []string{ServiceClusterIP, ServiceLoadBalancer, ServiceNodePort}

// gatewayServiceType is the type the gateway Service gets: the key's, else LoadBalancer on k3d
// (k3s's ServiceLB behind k3d's load balancer, which k3d-cluster.sh publishes on 127.0.0.1 only:
// the lab's host port) and ClusterIP on any other cluster.
func (c Config) gatewayServiceType() string {
	switch {
	case c.GatewayServiceType != "":
		return c.GatewayServiceType
	case c.Cluster == ClusterK3d:
		return ServiceLoadBalancer
	default:
		return ServiceClusterIP
	}
}

// GatewayExposed reports whether the stack asked for a gateway Service reachable from outside
// its cluster: a LoadBalancer or NodePort anywhere but on k3d.
func (c Config) GatewayExposed() bool {
	return c.Cluster != ClusterK3d && c.gatewayServiceType() != ServiceClusterIP
}

// exposureWarning is what `pulumi up` says when the stack exposes the gateway: what answers
// there, and how to close it again.
func (c Config) exposureWarning() string {
	return fmt.Sprintf("igwlab:%s is %s: the gateway Service is reachable from outside the cluster (on GKE an external load balancer open to 0.0.0.0/0, on EKS an internet-facing ELB), "+
		"and through it go-httpbin (bodies of 20 MiB, streams of 10 minutes) and the lab's gRPC backend answer anyone who finds the address, at your cloud's load-balancer prices. "+
		"The lab does not need it: pulumi config rm igwlab:%s -s %%s makes it ClusterIP again",
		configkey.GatewayServiceType, c.gatewayServiceType(), configkey.GatewayServiceType)
}

// checkServiceType validates igwlab:gatewayServiceType.
func (c Config) checkServiceType() []error {
	t := c.GatewayServiceType
	switch {
	case t == "":
		return nil
	case !slices.Contains(serviceTypes, t):
		return []error{&ConfigError{configkey.GatewayServiceType, t, strings.Join(serviceTypes, ", ") +
			" (unset: LoadBalancer on k3d, bound to 127.0.0.1; ClusterIP on any other cluster)"}}
	case c.Cluster == ClusterK3d && t != ServiceLoadBalancer:
		return []error{&ConfigError{configkey.GatewayServiceType, t, "LoadBalancer (or unset) when igwlab:cluster is k3d: igwlab:hostPort on 127.0.0.1 reaches the gateway through k3d's load balancer"}}
	}
	return nil
}

// warnExposure logs the exposure warning on every preview and up of a stack that asks for it.
func warnExposure(ctx *pulumi.Context, c Config) error {
	if !c.GatewayExposed() {
		return nil
	}
	return ctx.Log.Warn(fmt.Sprintf(c.exposureWarning(), ctx.Stack()), nil)
}
