//go:build !linux

package emulator

func newAlarm() alarm { return newTimerAlarm() }
