package main

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// kernelStart returns when the kernel started this process: the start time
// in /proc/self/stat (clock ticks since boot, USER_HZ = 100 on Linux) set
// against CLOCK_BOOTTIME, the clock it is kept in. It is at most one tick
// (10 ms) before the real start, never after. ok is false when it cannot
// be read or makes no sense (a start in the future).
func kernelStart() (t time.Time, ok bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command, field 2, is in parentheses and may hold spaces; field 3
	// follows its last ')'; the start time is field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return time.Time{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(string(fields[19]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, false
	}
	now := time.Now()
	age := time.Duration(ts.Nano()) - time.Duration(ticks)*(time.Second/100)
	if age < 0 {
		return time.Time{}, false
	}
	return now.Add(-age), true
}
