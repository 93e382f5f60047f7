package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
)

// One cluster, never two: a command whose --kubeconfig or --context names another cluster than
// the stack's, or whose target is another kind than the stack's, is refused before anything is
// applied or previewed, naming both; a flag that names a cluster the stack leaves unnamed is
// written to the stack, so that its pulumi up goes there too.
func TestOneClusterNeverTwo(t *testing.T) {
	existing := func() map[string]string {
		return map[string]string{"igwlab:scenario": "02-trigger", "igwlab:cluster": "existing",
			"igwlab:kubeconfig": "/home/u/.kube/config", "igwlab:kubeContext": "prod-eks"}
	}
	for _, tc := range []struct {
		name   string
		config map[string]string
		args   []string
		want   []string
	}{
		{"suite on another context", existing(), []string{"suite", "--target", "existing", "--context", "other"},
			[]string{"--context other", "context prod-eks", "igwlab:kubeContext prod-eks", "pulumi config set igwlab:kubeContext other -s lab"}},
		{"suite on another kubeconfig", existing(), []string{"suite", "--target", "existing", "--kubeconfig", "/tmp/other-kubeconfig"},
			[]string{"--kubeconfig /tmp/other-kubeconfig", "/home/u/.kube/config"}},
		{"existing target on the k3d stack", map[string]string{"igwlab:scenario": "02-trigger"}, []string{"suite", "--target", "existing", "--context", "other"},
			[]string{"--target existing", "its own k3d cluster", "igwlab:cluster existing"}},
		{"k3d target on an existing stack", existing(), []string{"suite", "--target", "k3d"},
			[]string{"--target k3d", "context prod-eks"}},
		{"preview on another context", existing(), []string{"preview", "--scenario", "04-mrpc", "--context", "other"},
			[]string{"--context other", "context prod-eks"}},
		{"up on another context", existing(), []string{"up", "--scenario", "04-mrpc", "--context", "other"},
			[]string{"--context other", "context prod-eks"}},
		{"context on the k3d stack", map[string]string{"igwlab:scenario": "02-trigger"}, []string{"up", "--scenario", "04-mrpc", "--context", "other"},
			[]string{"--kubeconfig/--context", "its own k3d cluster"}},
		{"kubeconfig with a context", map[string]string{"igwlab:scenario": "02-trigger"}, []string{"kubeconfig", "--context", "other"},
			[]string{"--kubeconfig/--context", "k3d cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &gatewaytest.Stack{KubeRef: gatewaytest.NewKube(1, 1), Config: tc.config}
			before := len(st.Config)
			fakeStackOpen(t, st)
			var out, errb bytes.Buffer
			if code := Main(context.Background(), tc.args, &out, &errb); code == 0 {
				t.Fatalf("exit 0, want a refusal; stderr %s", errb.String())
			}
			msg := strings.Join(strings.Fields(errb.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if len(st.Ups) != 0 || len(st.Previews) != 0 || len(st.Config) != before {
				t.Errorf("applied %v, previewed %v, config %v: nothing may change", st.Ups, st.Previews, st.Config)
			}
		})
	}
}

// Where the stack names no context, --context names it: up writes it to the stack before it
// applies, and a preview hands it to its temporary copy only.
func TestClusterFlagsSetWhatTheStackLeavesUnnamed(t *testing.T) {
	cfg := func() map[string]string {
		return map[string]string{"igwlab:scenario": "02-trigger", "igwlab:cluster": "existing", "igwlab:kubeconfig": "/home/u/.kube/config"}
	}
	st := &gatewaytest.Stack{KubeRef: gatewaytest.NewKube(1, 1), Config: cfg()}
	fakeStackOpen(t, st)
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"preview", "--scenario", "04-mrpc", "--context", "mine"}, &out, &errb); code != 0 {
		t.Fatalf("preview: exit %d: %s", code, errb.String())
	}
	if len(st.Previews) != 1 || st.Previews[0]["igwlab:kubeContext"] != "mine" || st.Config["igwlab:kubeContext"] != "" {
		t.Fatalf("preview changes %v, stack config %v: the context goes to the preview only", st.Previews, st.Config)
	}
	if code := Main(context.Background(), []string{"up", "--scenario", "04-mrpc", "--context", "mine"}, &out, &errb); code != 0 {
		t.Fatalf("up: exit %d: %s", code, errb.String())
	}
	if st.Config["igwlab:kubeContext"] != "mine" || len(st.Ups) != 1 {
		t.Fatalf("stack config %v, ups %v: up writes the context, then applies", st.Config, st.Ups)
	}
}
