//go:build unix

package pulumistack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakePulumi stands in for the Pulumi CLI under the real Automation API: it answers version
// (3.205, the last that writes engine events to the --event-log file rather than streaming them
// over gRPC, which a script can do) and stack select, keeps config in the file --config-file names, and refuses a config write
// without one (that would be the stack's own Pulumi.<stack>.yaml). Its preview copies the
// config file it was given to $FAKE_PULUMI_SEEN, writes the summary event the Automation API
// waits for, and prints a diff; with $FAKE_PULUMI_BLOCK it writes its pid there and hangs.
const fakePulumi = `#!/bin/bash
printf '%s\n' "$*" >>"$FAKE_PULUMI_LOG"
while [[ ${1:-} == -* ]]; do shift; done # global flags (--non-interactive)
cf= ev= prev=
for a in "$@"; do
	case $a in --config-file=*) cf=${a#--config-file=} ;; esac
	[[ $prev == --config-file ]] && cf=$a
	[[ $prev == --event-log ]] && ev=$a
	prev=$a
done
case $1 in
version) echo v3.205.0 ;;
stack) ;;
config)
	[[ -n $cf ]] || { echo "fake pulumi: config $2 would write the stack's own config file" >&2; exit 3; }
	case $2 in
	set) key= value= after=
		for a in "$@"; do
			if [[ -n $after ]]; then value=$a; fi
			[[ $a == -- ]] && after=1
			[[ $a == --plaintext || $a == --secret ]] && key=$p
			p=$a
		done
		echo "  $key: $value" >>"$cf" ;;
	get) key=$3; [[ $key == --config-file ]] && key=$5
		grep -q "^  $key:" "$cf" || { echo "error: configuration key '$key' not found for stack 'lab'" >&2; exit 255; }
		echo '{"value":"x","secret":false}' ;;
	rm) echo "  # removed $5" >>"$cf" ;;
	esac ;;
preview)
	cp "$cf" "$FAKE_PULUMI_SEEN"
	if [[ -n ${FAKE_PULUMI_BLOCK:-} ]]; then echo $$ >"$FAKE_PULUMI_BLOCK.tmp"; mv "$FAKE_PULUMI_BLOCK.tmp" "$FAKE_PULUMI_BLOCK"; sleep 300; fi
	echo '{"sequence":0,"timestamp":0,"summaryEvent":{"maybeCorrupt":false,"durationSeconds":0,"resourceChanges":{"update":1,"same":30},"PolicyPacks":{}}}' >>"$ev"
	sleep 1 # the Automation API tails the file and stops when the CLI exits: let it read the line
	echo "    ~ kubernetes:networking.istio.io/v1alpha3:EnvoyFilter: (update)"
	echo "        + max_requests_per_connection: 10000" ;;
*) echo "fake pulumi: unsupported $*" >&2; exit 2 ;;
esac
`

const trackedConfig = `encryptionsalt: v1:+4X4z636Ypw=:v1:Xo+9g1boL8mv/qCu:EqmBlIFMVljAx1G6LS1iYknIUj8JGQ==
config:
  igwlab:scenario: 02-trigger
  igwlab:knobs: '{"hcm.drain_timeout":"1s"}'
  igwlab:grafanaPassword:
    secure: v1:rlHpvDP0OlaySf7o:DFW/9Gvsk2DcrflsAaHebDadmrEg9qg=
`

// previewProject makes a project folder with a tracked stack config and the fake CLI on PATH;
// it returns the folder and the environment for a process that previews in it.
func previewProject(t *testing.T) (dir string, env map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the fake Pulumi CLI")
	}
	dir, bin, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	files := map[string]string{filepath.Join(dir, "Pulumi.yaml"): "name: igwlab\nruntime: go\n",
		filepath.Join(dir, "Pulumi.lab.yaml"): trackedConfig, filepath.Join(bin, "pulumi"): fakePulumi}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, map[string]string{"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH"), "TMPDIR": tmp,
		"FAKE_PULUMI_LOG": filepath.Join(tmp, "pulumi.log"), "FAKE_PULUMI_SEEN": filepath.Join(tmp, "seen.yaml"),
		"PULUMI_CONFIG_PASSPHRASE": ""}
}

var previewChanges = map[string]string{"igwlab:scenario": "04-mrpc", "igwlab:knobs": ""}

// previewHelper is a process that previews a scenario switch on the lab stack of dir.
func previewHelper(dir string) int {
	st, err := Open(context.Background(), Options{Name: "lab", WorkDir: dir})
	if err == nil {
		_, err = st.Preview(context.Background(), previewChanges, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// snapshot reads every file of a folder.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s changed %s:\n%s", what, name, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s left %s in the project folder", what, name)
		}
	}
}

// TestPreviewNeverWritesTheStackConfig previews a scenario switch through the real Automation
// API: the preview sees the switch, and the project folder, the tracked Pulumi.lab.yaml
// included, is byte for byte as it was, with no temporary copy left.
func TestPreviewNeverWritesTheStackConfig(t *testing.T) {
	dir, env := previewProject(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	before := snapshot(t, dir)
	st, err := Open(context.Background(), Options{Name: "lab", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Preview(context.Background(), previewChanges, nil)
	if err != nil {
		b, _ := os.ReadFile(env["FAKE_PULUMI_LOG"])
		t.Fatalf("preview: %v\n%s", err, b)
	}
	if !strings.Contains(p.Diff, "max_requests_per_connection") || p.Changes["update"] != 1 {
		t.Errorf("preview result %+v", p)
	}
	seen, err := os.ReadFile(env["FAKE_PULUMI_SEEN"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(seen), trackedConfig) || !strings.Contains(string(seen), "igwlab:scenario: 04-mrpc") ||
		!strings.Contains(string(seen), "# removed igwlab:knobs") {
		t.Errorf("the preview was not given the stack's config with the switch:\n%s", seen)
	}
	sameFiles(t, "a preview", before, snapshot(t, dir))
	if left, _ := filepath.Glob(filepath.Join(env["TMPDIR"], "igwlab-preview-*")); len(left) > 0 {
		t.Errorf("the temporary config was left behind: %v", left)
	}
}

// TestKilledPreviewLeavesTheStackConfigAlone kills a previewing process (SIGKILL: nothing of
// it runs after) while Pulumi is in the middle of the preview.
func TestKilledPreviewLeavesTheStackConfigAlone(t *testing.T) {
	dir, env := previewProject(t)
	before := snapshot(t, dir)
	block := filepath.Join(env["TMPDIR"], "blocked")
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), blockPreviewEv+"="+dir, "FAKE_PULUMI_BLOCK="+block)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0; {
		if b, err := os.ReadFile(block); err == nil {
			fmt.Sscan(string(b), &pid)
			continue
		}
		select {
		case err := <-exited:
			t.Fatalf("the preview ended (%v) before Pulumi was running it\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the preview never started\n%s", stderr.String())
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	_ = syscall.Kill(pid, syscall.SIGKILL)
	sameFiles(t, "a killed preview", before, snapshot(t, dir))
}
