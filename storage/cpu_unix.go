//go:build unix

package storage

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used, and
// whether it could be read.
func processCPU() (time.Duration, bool) {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
