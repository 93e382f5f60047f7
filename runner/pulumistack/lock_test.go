package pulumistack

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Helper processes of these tests are this test binary, told what to be by the environment.
const (
	holdLockEnv    = "IGWLAB_TEST_HOLD_LOCK"    // "workdir|stack": take the lock, say so, wait to be killed
	blockPreviewEv = "IGWLAB_TEST_PREVIEW_FROM" // a workdir: preview a change to its lab stack
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdLockEnv); spec != "" {
		dir, name, _ := strings.Cut(spec, "|")
		if _, err := Lock(dir, name, "suite --target k3d"); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Hour)
	}
	if dir := os.Getenv(blockPreviewEv); dir != "" {
		os.Exit(previewHelper(dir))
	}
	os.Exit(m.Run())
}

// holdLock starts another process that takes the stack's lock and keeps it until killed.
func holdLock(t *testing.T, dir, name string) *exec.Cmd {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+dir+"|"+name)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("the helper did not take the lock: %q", line)
	}
	return cmd
}

func TestLockIsHeldAcrossProcessesAndDiesWithItsHolder(t *testing.T) {
	dir, name := t.TempDir(), "lab"
	holder := holdLock(t, dir, name)

	start := time.Now()
	_, err := Lock(dir, name, "preview --scenario 04-mrpc")
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("a second process took the lock: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("Lock waited %s: it must fail at once", waited)
	}
	for _, want := range []string{"stack lab", fmt.Sprintf("pid %d", holder.Process.Pid), "igwlab suite --target k3d", "wait for it to finish"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q lacks %q", err, want)
		}
	}
	// Another stack, or the same stack of another project folder, is not held.
	for _, other := range [][2]string{{dir, "other"}, {t.TempDir(), name}} {
		release, err := Lock(other[0], other[1], "up")
		if err != nil {
			t.Fatalf("%v: %v", other, err)
		}
		release()
	}
	// A holder killed outright (no deferred release runs) leaves no stale lock.
	_ = holder.Process.Kill()
	_ = holder.Wait()
	release, err := Lock(dir, name, "up")
	if err != nil {
		t.Fatalf("the lock outlived its killed holder: %v", err)
	}
	release()
}
