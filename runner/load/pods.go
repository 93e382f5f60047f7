package load

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/igwlab/igwlab/h2dial"
)

// runPods runs the client once per target side by side, as each of a scenario's client pods
// runs its own, and adds their results up (h2dial.Combine). Only h2dial's results combine
// exactly; the scenario catalog allows no other client in client pods.
func runPods(ctx context.Context, c Client, s Spec) (*Result, error) {
	if c.Kind != "h2dial" {
		return nil, fmt.Errorf("load: client %s cannot run in several client pods (h2dial can)", c.Kind)
	}
	for _, t := range s.Targets {
		if !s.AllowRemote {
			if err := checkLoopback(t); err != nil {
				return nil, err
			}
		}
	}
	res := make([]*Result, len(s.Targets))
	errs := make([]error, len(s.Targets))
	var wg sync.WaitGroup
	for i, t := range s.Targets {
		one := s
		one.Target, one.Targets = t, nil
		wg.Go(func() { res[i], errs[i] = c.Run(ctx, one) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var natives []*h2dial.Result
	for _, r := range res {
		n, ok := r.Native.(*h2dial.Result)
		if !ok {
			return nil, fmt.Errorf("load: h2dial returned no native result")
		}
		natives = append(natives, n)
	}
	out := FromH2dial(h2dial.Combine(natives))
	var text strings.Builder
	for i, r := range res {
		fmt.Fprintf(&text, "client pod %d (%s)\n%s\n", i, s.Targets[i], r.Text)
	}
	out.Text = text.String() + "all client pods\n" + out.Text
	return out, nil
}
