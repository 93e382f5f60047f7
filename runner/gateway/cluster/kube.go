package cluster

import "github.com/igwlab/igwlab/runner/kube"

// Kube is what the cluster target needs from Kubernetes (see runner/kube).
type Kube = kube.Kube

// KubeClient is Kube over client-go.
type KubeClient = kube.KubeClient

// Constructors and helpers of runner/kube, under the names the cluster target's callers use.
var (
	NewKubeClient           = kube.NewKubeClient
	NewKubeClientFromConfig = kube.NewKubeClientFromConfig
	ReadyPods               = kube.ReadyPods
)
