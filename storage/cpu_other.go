//go:build !unix

package storage

import "time"

// processCPU cannot tell on this platform: the writer never splits its
// groups (gather).
func processCPU() (time.Duration, bool) { return 0, false }
