package doctor

import (
	"context"
	"strconv"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/kube"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// FromStack is the lab's config as far as the doctor needs it: the program's defaults with
// the stack's values for the cluster, its ports, its profile and what the pods request. Values the program
// would refuse are its to report, with the key and the allowed range, at preview.
func FromStack(ctx context.Context, st pulumistack.Stack) (infra.Config, error) {
	cfg := infra.Defaults
	// The profile first: it sets the sizes that their own keys, read below, override.
	if v, ok, err := st.GetConfig(ctx, configkey.Full(configkey.Profile)); err != nil {
		return cfg, err
	} else if _, known := infra.Profiles[v]; ok && known {
		cfg = cfg.WithProfile(v)
	}
	for key, dst := range map[string]*string{configkey.Cluster: &cfg.Cluster, configkey.ClusterName: &cfg.ClusterName,
		configkey.Kubeconfig: &cfg.Kubeconfig, configkey.KubeContext: &cfg.KubeContext} {
		v, ok, err := st.GetConfig(ctx, configkey.Full(key))
		if err != nil {
			return cfg, err
		}
		if ok && v != "" {
			*dst = v
		}
	}
	for key, dst := range map[string]*int{configkey.HostPort: &cfg.HostPort, configkey.APIPort: &cfg.APIPort,
		configkey.GatewayReplicas: &cfg.GatewayReplicas, configkey.ProxyConcurrency: &cfg.ProxyConcurrency,
		configkey.WaypointReplicas: &cfg.WaypointReplicas} {
		v, ok, err := st.GetConfig(ctx, configkey.Full(key))
		if err != nil {
			return cfg, err
		}
		if n, err := strconv.Atoi(v); ok && err == nil {
			*dst = n
		}
	}
	return cfg, nil
}

// ForStack runs every check for the stack's lab on this machine (and, for a cluster of the
// user's, on that cluster, reached as the stack reaches it).
func ForStack(ctx context.Context, st pulumistack.Stack) (Report, error) {
	cfg, err := FromStack(ctx, st)
	if err != nil {
		return nil, err
	}
	o := Options{Config: cfg, Tools: Exec{}, PortBusy: PortBusy}
	if cfg.Cluster == infra.ClusterExisting {
		kc, err := kube.NewClient(cfg.Kubeconfig, cfg.KubeContext)
		if err != nil {
			return Report{{"cluster", Fail, err.Error(), "check igwlab:kubeconfig and igwlab:kubeContext (kubectl config get-contexts)"}}, nil
		}
		defer kc.Close()
		o.Cluster = kc
	}
	return Run(ctx, o), nil
}

// Preflight is what `up` and `suite` on a cluster target run before they apply anything: every
// check, and an error listing the failures with their fixes.
func Preflight(ctx context.Context, st pulumistack.Stack) error {
	r, err := ForStack(ctx, st)
	if err != nil {
		return err
	}
	return r.Err()
}
