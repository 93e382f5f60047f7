//go:build unix

package suite

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// fakePulumiCLI stands in for the Pulumi CLI under the real Automation API, doing with a
// stack's config what the real one does: `config set/get/rm --stack S` read and write
// Pulumi.S.yaml in the project folder (the working directory the Automation API runs it in).
// `up` reports a finished update on the event log; outputs and history are empty.
const fakePulumiCLI = `#!/bin/bash
printf '%s\n' "$*" >>"$FAKE_PULUMI_LOG"
stack= ev= prev= key= value= after=
args=()
for a in "$@"; do
	[[ $prev == --stack ]] && stack=$a
	[[ $prev == --event-log ]] && ev=$a
	if [[ -n $after ]]; then value=$a; fi
	[[ $a == -- ]] && after=1
	prev=$a
	args+=("$a")
done
file="Pulumi.${stack##*/}.yaml"
setkey() { # key value
	[[ -f $file ]] || echo "config:" >"$file"
	grep -v "^  $1:" "$file" >"$file.tmp" || true
	echo "  $1: '$2'" >>"$file.tmp"
	mv "$file.tmp" "$file"
}
while [[ ${1:-} == --* ]]; do shift; done
case "$1 $2" in
"version "*) echo v3.274.1 ;;
"stack select"|"stack init") ;;
"config set")
	for a in "${args[@]}"; do
		case $a in --*|config|set|"$stack"|"$value") ;; *) key=$a ;; esac
	done
	setkey "$key" "$value" ;;
"config get")
	key=${args[-1]}
	line=$(grep "^  $key:" "$file" 2>/dev/null) || { echo "error: configuration key '$key' not found for stack '$stack'" >&2; exit 255; }
	v=${line#*: }; v=${v#\'}; v=${v%\'}
	printf '{"value":"%s","secret":false}\n' "$v" ;;
"config rm")
	key=${args[-1]}
	[[ -f $file ]] && { grep -v "^  $key:" "$file" >"$file.tmp" || true; mv "$file.tmp" "$file"; } ;;
"up "*)
	[[ -n $ev ]] && echo '{"sequence":0,"timestamp":0,"summaryEvent":{"maybeCorrupt":false,"durationSeconds":0,"resourceChanges":{"update":1},"PolicyPacks":{}}}' >>"$ev"
	sleep 1 ;;
"stack output") echo '{}' ;;
"stack history") echo '[]' ;;
*) echo "fake pulumi: unsupported $*" >&2; exit 2 ;;
esac
`

// teeStack writes the stack's config and runs its update through the real Automation API (the
// fake CLI above), and applies each update to the fake lab's pool as istiod would.
type teeStack struct {
	pulumistack.Stack // the Automation API's
	lab               *gatewaytest.Stack
}

func (s teeStack) SetConfig(ctx context.Context, k, v string, secret bool) error {
	if err := s.Stack.SetConfig(ctx, k, v, secret); err != nil {
		return err
	}
	return s.lab.SetConfig(ctx, k, v, secret)
}

func (s teeStack) RemoveConfig(ctx context.Context, k string) error {
	if err := s.Stack.RemoveConfig(ctx, k); err != nil {
		return err
	}
	return s.lab.RemoveConfig(ctx, k)
}

func (s teeStack) Up(ctx context.Context, w io.Writer) (map[string]any, error) {
	if _, err := s.Stack.Up(ctx, w); err != nil {
		return nil, err
	}
	return s.lab.Up(ctx, w)
}

// TestSuiteLeavesTheRepositoryClean: a suite on the real lab (here its fake: the Automation API
// over a Pulumi CLI that writes config files as the real one does, a fake cluster) writes the
// scenario and knobs of every switch to the stack's own Pulumi.<stack>.yaml, which the
// repository never tracks: git status is clean afterwards, and the file holds the last switch.
func TestSuiteLeavesTheRepositoryClean(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The project's tracked files that decide what a stack writes and what git sees.
	tracked := strings.Fields(git(root, "ls-files", "--", ".gitignore", "Pulumi*.yaml"))
	if len(tracked) == 0 {
		t.Skip("not a git checkout")
	}
	repo := t.TempDir()
	for _, f := range tracked {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(repo, "init", "-q")
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "the project")

	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "pulumi"), []byte(fakePulumiCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the fake Pulumi CLI")
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_PULUMI_LOG", filepath.Join(t.TempDir(), "calls"))
	ctx := context.Background()
	st, err := pulumistack.Open(ctx, pulumistack.Options{Name: "lab", WorkDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	k := gatewaytest.NewKube(3, 1)
	lab := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{}}
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: teeStack{st, lab}, DrainTimeout: 5 * time.Second})
	cat, _ := stacks.Builtin()
	sum, err := Run(ctx, Options{Target: c, Catalog: cat, Only: []string{"02-trigger", "04-mrpc"}, Duration: time.Second,
		OutDir: t.TempDir(), ApplyTimeout: 5 * time.Second, NoReport: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Scenarios["04-mrpc"]; r.Status != "ok" {
		t.Fatalf("04-mrpc: %s %s", r.Status, r.Reason)
	}
	if status := git(repo, "status", "--porcelain", "--untracked-files=all"); status != "" {
		t.Errorf("the suite left the repository dirty:\n%s", status)
	}
	b, err := os.ReadFile(filepath.Join(repo, "Pulumi.lab.yaml"))
	if err != nil || !strings.Contains(string(b), "igwlab:scenario: '04-mrpc'") {
		t.Errorf("the stack's own file does not hold the last switch (%v):\n%s", err, b)
	}
}
