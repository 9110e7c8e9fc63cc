//go:build unix

package storagetest

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) the process has used: on a
// shared machine it measures Hearth's work where wall time measures the
// machine's load.
func CPUTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
