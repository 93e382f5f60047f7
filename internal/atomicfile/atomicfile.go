// Package atomicfile writes files so that a reader, or a run interrupted half way, never sees a
// partial one: data goes to a temporary file in the same folder, which is then renamed.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path atomically, creating the folder.
func Write(path string, data []byte) error { return WriteMode(path, data, 0o644) }

// WriteMode is Write with the file's permissions (0o600 for a file holding a secret: it never
// exists with wider ones, not even as the temporary file).
func WriteMode(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
