package emulator

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdAlarm is a Linux timerfd read through the network poller: precise to microseconds,
// and a goroutine waiting on it parks without holding a thread.
type timerfdAlarm struct {
	fd int
	f  *os.File
}

func newAlarm() alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerAlarm()
	}
	return &timerfdAlarm{fd: fd, f: os.NewFile(uintptr(fd), "igwlab-clock")}
}

func (a *timerfdAlarm) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(a.fd, 0, &spec, nil)
}

func (a *timerfdAlarm) wait() error {
	var buf [8]byte
	_, err := a.f.Read(buf[:])
	return err
}

func (a *timerfdAlarm) close() { _ = a.f.Close() }
