package gateway

import (
	"context"
	"fmt"
)

// AdminPool is a target's pods of one role, as the checks of runner/inforce read them.
type AdminPool struct {
	Target Target
	Role   string
	// Fixed, when set, are the pods to read instead of listing them.
	Fixed []Pod
}

func (p AdminPool) list(ctx context.Context) ([]Pod, error) {
	if p.Fixed != nil {
		return p.Fixed, nil
	}
	return p.Target.Pods(ctx, p.Role)
}

// Pods implements inforce.Pool.
func (p AdminPool) Pods(ctx context.Context) ([]string, error) {
	pods, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(pods))
	for i, pod := range pods {
		out[i] = pod.Name
	}
	return out, nil
}

// Admin implements inforce.Pool.
func (p AdminPool) Admin(ctx context.Context, name, path string) ([]byte, error) {
	pods, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		if pod.Name == name {
			return p.Target.Admin(ctx, pod, path)
		}
	}
	return nil, fmt.Errorf("no %s pod %s", p.Role, name)
}
