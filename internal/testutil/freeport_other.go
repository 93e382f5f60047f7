//go:build !unix

package testutil

import "os"

// lockFile has no cross-process lock off unix; the in-process set still holds.
func lockFile(*os.File) bool { return true }
