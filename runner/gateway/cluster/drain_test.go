package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
)

// TestDrainTimeoutFollowsTheStack: the wait for drained listeners after a switch is the
// stack's gateway drain time (the program's 5 s when unset) plus the margin, so a stack set to
// Istio's 45 s waits long enough and the lab's default does not wait two minutes.
func TestDrainTimeoutFollowsTheStack(t *testing.T) {
	cases := []struct {
		config string
		want   time.Duration
		err    string
	}{
		{"", 5*time.Second + cluster.DrainMargin, ""},
		{"45s", 45*time.Second + cluster.DrainMargin, ""},
		{"2m", 2*time.Minute + cluster.DrainMargin, ""},
		{"1500ms", 0, `igwlab:gatewayDrainDuration = "1500ms": allowed whole seconds`},
	}
	for _, c := range cases {
		st := &gatewaytest.Stack{Config: map[string]string{}}
		if c.config != "" {
			st.Config["igwlab:gatewayDrainDuration"] = c.config
		}
		got, err := cluster.DrainTimeout(context.Background(), st)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.config, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %s %v, want %s", c.config, got, err, c.want)
		}
	}
}
