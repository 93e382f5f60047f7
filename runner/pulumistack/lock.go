package pulumistack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrBusy is returned by Lock when another igwlab process holds the stack.
var ErrBusy = errors.New("stack in use")

// Lock takes the lab stack for this process: igwlab's up, preview and suite on a cluster
// target hold it while they run, so a preview cannot show (or an up apply) a switch while a
// suite is between its own switches. It never waits: a second process fails at once, told who
// holds the stack. The lock is the kernel's (flock on a file in the temporary folder, keyed by
// the project folder and stack name): it goes with its process, however that ends.
func Lock(workDir, stackName, purpose string) (release func(), err error) {
	abs, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + stackName))
	dir := filepath.Join(os.TempDir(), "igwlab-locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, hex.EncodeToString(sum[:8])+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking stack %s: %w", stackName, err)
	}
	if !ok {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another igwlab process"
		}
		return nil, fmt.Errorf("%w: stack %s (%s) is held by %s; wait for it to finish, then run this again", ErrBusy, stackName, abs, who)
	}
	_ = f.Truncate(0)
	fmt.Fprintf(f, "pid %d (igwlab %s, since %s)\n", os.Getpid(), purpose, time.Now().Format("15:04:05"))
	return func() {
		_ = f.Truncate(0)
		unlock(f)
		f.Close()
	}, nil
}
