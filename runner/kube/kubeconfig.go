package kube

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
)

// NewClientFromKubeconfig reads a kubeconfig's text (and a context; "" for its current one):
// the k3d cluster's, which the lab program holds as a secret output, not as a file.
func NewClientFromKubeconfig(text, context string) (*Client, error) {
	cc, err := clientcmd.Load([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*cc, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return NewClientFromConfig(cfg)
}
