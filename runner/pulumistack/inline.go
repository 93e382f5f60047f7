package pulumistack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// inlineWorkspace is the folder an inline stack's workspace lives in ("": one the Automation API
// makes). An inline stack runs the same program as `pulumi up -s <name>`, so it takes the same
// config: the repository's Pulumi.yaml (the project, whose config holds the lab's defaults) and
// Pulumi.<name>.yaml (the stack's own settings) are copied into its workspace, and copied again
// whenever one is newer than the workspace's copy (the user edited it). Without them the stack
// would run on the program's defaults alone, not on the settings the user made.
func inlineWorkspace(o Options) (string, error) {
	dir := o.InlineDir
	var srcs []string
	if o.WorkDir != "" {
		for _, name := range []string{"Pulumi.yaml", "Pulumi." + o.Name + ".yaml"} {
			src := filepath.Join(o.WorkDir, name)
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return "", err
			}
			srcs = append(srcs, src)
		}
	}
	if dir == "" && len(srcs) == 0 {
		return "", nil
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "igwlab-inline-"); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, src := range srcs {
		if err := copyIfNewer(src, filepath.Join(dir, filepath.Base(src))); err != nil {
			return "", fmt.Errorf("the inline stack's config from %s: %w", src, err)
		}
	}
	return dir, nil
}

// copyIfNewer copies src to dst unless dst is at least as new.
func copyIfNewer(src, dst string) error {
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if di, err := os.Stat(dst); err == nil && !si.ModTime().After(di.ModTime()) {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, dst) // whole or not at all: a Ctrl-C never leaves half a config
}
