//go:build !linux && !darwin && !freebsd

package emulator

import "syscall"

func reusePortControl(_, _ string, _ syscall.RawConn) error { return nil }
