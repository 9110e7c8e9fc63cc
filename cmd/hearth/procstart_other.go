//go:build !linux

package main

import "time"

// kernelStart is Linux's alone; elsewhere the hooks count from main's
// processStart.
func kernelStart() (time.Time, bool) { return time.Time{}, false }
